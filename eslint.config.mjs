import tseslint from 'typescript-eslint';
import importX, { createNodeResolver } from 'eslint-plugin-import-x';

/** Relative imports that reach `lambdas/` or `lib/` from another top-level folder. */
const LAMBDAS = {
  regex: '^(\\.\\./)+lambdas(/|$)',
  message: 'lib/ (what is deployed) does not import lambdas/ (what runs): put what both need in contract/.',
};
const LIB = {
  regex: '^(\\.\\./)+lib(/|$)',
  message: 'lambdas/ (what runs) does not import lib/ (what is deployed): put what both need in contract/.',
};
/** `z.catch` carries all of zod's util module into a bundle (~7 KB): lambdas/marketplace/schemas.ts's `fallback` instead. */
const ZOD_CATCH = {
  object: 'z',
  property: 'catch',
  message:
    "z.catch bundles all of zod's util module (~7 KB): build the ZodMiniCatch as `fallback` in lambdas/marketplace/schemas.ts does.",
};
/** What is bundled (lambdas/, contract/) uses zod/mini: classic zod would add ~107 KB to every bundle reaching it. */
const CLASSIC_ZOD = {
  name: 'zod',
  message:
    "Bundled code imports 'zod/mini' (functional API); classic zod adds ~107 KB to every bundle (BENCHMARKS.md §7).",
};
const CONTRACT_IMPORTS = {
  regex: '^(\\.\\./)+(lib|lambdas|local|bin|cli|test|bench)(/|$)',
  message: 'contract/ imports neither side: it is the agreement between them.',
};

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
    // No import circle (issue 22): a module never reaches itself through its value imports. Type-only
    // circles are erased at run time, so this rule skips them; test/unit/architecture.test.ts checks
    // the whole graph, types included.
    plugins: { 'import-x': importX },
    settings: {
      'import-x/extensions': ['.ts', '.mjs', '.js'],
      'import-x/parsers': { '@typescript-eslint/parser': ['.ts'] },
      'import-x/resolver-next': [createNodeResolver({ extensions: ['.ts', '.mjs', '.js', '.json'] })],
    },
    rules: { 'import-x/no-cycle': 'error' },
  },
  {
    files: ['contract/**/*.ts'],
    rules: {
      'no-restricted-imports': [
        'error',
        {
          paths: [CLASSIC_ZOD],
          patterns: [
            CONTRACT_IMPORTS,
            {
              regex: '^(?!\\.|zod/mini$)',
              message: 'contract/ is tiny and side-effect free: no packages but zod/mini.',
            },
          ],
        },
      ],
    },
  },
  {
    files: ['lib/**/*.ts'],
    rules: { 'no-restricted-imports': ['error', { patterns: [LAMBDAS] }] },
  },
  {
    files: ['lambdas/**/*.ts'],
    ignores: ['lambdas/domain/**'],
    rules: { 'no-restricted-imports': ['error', { paths: [CLASSIC_ZOD], patterns: [LIB] }] },
  },
  {
    files: ['lambdas/**/*.ts', 'contract/**/*.ts'],
    rules: { 'no-restricted-properties': ['error', ZOD_CATCH] },
  },
  {
    // The domain is pure: rules only. No AWS SDK, no middy, no Powertools, no environment, no clock,
    // no timers, and nothing from the outer rings or from the contract's infrastructure facts.
    files: ['lambdas/domain/**/*.ts'],
    rules: {
      'no-restricted-imports': [
        'error',
        {
          paths: [CLASSIC_ZOD],
          patterns: [
            LIB,
            {
              group: ['@aws-sdk/*', '@middy/*', 'aws-lambda', '@aws-lambda-powertools/*'],
              message: 'lambdas/domain is pure: no AWS, middy or Powertools imports.',
            },
            {
              group: ['timers', 'timers/*', 'node:timers', 'node:timers/*'],
              message: 'lambdas/domain sets no timers; the handlers and adapters own time.',
            },
            {
              regex: '^(\\.\\./)+(adapters|handlers|middleware|marketplace|http)(/|$)',
              message: 'lambdas/domain does not import the outer rings (adapters, handlers, middleware, marketplace).',
            },
            {
              regex: '^(\\.\\./)+contract/(routes|resources|settings)$',
              message:
                "lambdas/domain does not import the contract's infrastructure parts (routes, resources, settings).",
            },
          ],
        },
      ],
      'no-restricted-properties': [
        'error',
        ZOD_CATCH,
        { object: 'process', property: 'env', message: 'lambdas/domain reads no environment; pass config in.' },
        { object: 'Date', property: 'now', message: 'lambdas/domain reads no clock; pass `now` in.' },
      ],
      'no-restricted-globals': [
        'error',
        { name: 'process', message: 'lambdas/domain does not touch process.' },
        ...['setTimeout', 'setInterval', 'setImmediate'].map((name) => ({
          name,
          message: 'lambdas/domain sets no timers; the handlers and adapters own time.',
        })),
      ],
    },
  },
);
