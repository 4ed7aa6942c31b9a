import tseslint from 'typescript-eslint';

export default tseslint.config(
  { ignores: ['node_modules/**', 'cdk.out/**', 'coverage/**', 'jest.config.js', 'bench/out/**', '.local-data/**'] },
  ...tseslint.configs.recommended,
  {
    rules: {
      '@typescript-eslint/no-unused-vars': ['error', { argsIgnorePattern: '^_', varsIgnorePattern: '^_' }],
      '@typescript-eslint/consistent-type-imports': 'error',
    },
  },
  {
    // The domain is pure: no AWS SDK, no middy, no environment.
    files: ['lambdas/domain/**/*.ts'],
    rules: {
      'no-restricted-imports': ['error', { patterns: [
        { group: ['@aws-sdk/*', '@middy/*', 'aws-lambda', '@aws-lambda-powertools/*'], message: 'lambdas/domain is pure: no AWS, middy or Powertools imports.' },
      ] }],
      'no-restricted-properties': ['error',
        { object: 'process', property: 'env', message: 'lambdas/domain reads no environment; pass config in.' },
        { object: 'Date', property: 'now', message: 'lambdas/domain reads no clock; pass `now` in.' },
      ],
      'no-restricted-globals': ['error', { name: 'process', message: 'lambdas/domain does not touch process.' }],
    },
  },
);
