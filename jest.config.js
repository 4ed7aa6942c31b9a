/** Four projects: unit, infra, workflow, e2e. `npm test` runs them all. */
const base = {
  preset: 'ts-jest',
  testEnvironment: 'node',
  // middy >= 5 ships ESM only; let ts-jest transform it.
  transformIgnorePatterns: ['/node_modules/(?!@middy/)'],
  transform: {
    '^.+\\.[tj]sx?$': ['ts-jest', { isolatedModules: true, tsconfig: { allowJs: true, module: 'commonjs' } }],
  },
  setupFiles: ['<rootDir>/test/setup-env.ts'],
};
module.exports = {
  projects: [
    { ...base, displayName: 'unit', testMatch: ['<rootDir>/test/unit/**/*.test.ts'] },
    { ...base, displayName: 'infra', testMatch: ['<rootDir>/test/infra/**/*.test.ts'] },
    { ...base, displayName: 'workflow', testMatch: ['<rootDir>/test/workflow/**/*.test.ts'] },
    { ...base, displayName: 'e2e', testMatch: ['<rootDir>/test/e2e/**/*.test.ts'] },
  ],
  testTimeout: 60000,
};
