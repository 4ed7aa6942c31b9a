/**
 * Projects: unit, infra, workflow, e2e, and e2e-live (the dialect-sensitive e2e files again, against
 * the simulator in production's dialect: same test files, MARKETPLACE_DIALECT=live). `npm test` runs them all.
 */
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
    {
      ...base,
      displayName: 'e2e-live',
      // One local runtime per test file (the handlers parse the environment once per module
      // registry), so a dialect is a project setting rather than a describe.each inside a file.
      testMatch: [
        '<rootDir>/test/e2e/relay.test.ts', '<rootDir>/test/e2e/fleet-watch.test.ts', '<rootDir>/test/e2e/lease-routes.test.ts',
        '<rootDir>/test/e2e/placement.test.ts', '<rootDir>/test/e2e/orphan-orders.test.ts', '<rootDir>/test/e2e/standing-orders.test.ts',
        '<rootDir>/test/e2e/teams.test.ts', '<rootDir>/test/e2e/outbid-recovery.test.ts', '<rootDir>/test/e2e/budgets.test.ts',
      ],
      setupFiles: [...base.setupFiles, '<rootDir>/test/setup-live-dialect.ts'],
    },
  ],
  testTimeout: 60000,
};
