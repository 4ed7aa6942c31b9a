/**
 * Projects: unit, infra, workflow, e2e, and e2e-live (the dialect-sensitive e2e files again, against
 * the simulator in production's dialect: same test files, MARKETPLACE_DIALECT=live). `npm test` runs them all.
 */
const { availableParallelism } = require('node:os');

const base = {
  testEnvironment: 'node',
  // middy >= 5 ships ESM only; let the transform make it CommonJS.
  transformIgnorePatterns: ['/node_modules/(?!@middy/)'],
  // Transpile only (tsc --noEmit type-checks), with swc: ts-jest's TypeScript transpiler cost ~5.6 s of
  // CPU per worker for an e2e file's modules on a cold cache (a clean clone, 6 workers at once), swc
  // ~2.8 s. One difference: swc's CommonJS exports are getters, so a test that spies on a module's
  // export mocks that module with writable properties first (http-notifier.test.ts).
  transform: {
    '^.+\\.[tj]sx?$': [
      '@swc/jest',
      {
        jsc: { target: 'es2022', parser: { syntax: 'typescript' } },
        module: { type: 'commonjs' },
        sourceMaps: 'inline',
      },
    ],
  },
  setupFiles: ['<rootDir>/test/setup-env.ts'],
};
module.exports = {
  projects: [
    { ...base, displayName: 'unit', testMatch: ['<rootDir>/test/unit/**/*.test.ts'] },
    { ...base, displayName: 'infra', testMatch: ['<rootDir>/test/infra/**/*.test.ts'] },
    { ...base, displayName: 'workflow', testMatch: ['<rootDir>/test/workflow/**/*.test.ts'] },
    {
      ...base,
      displayName: 'e2e',
      testMatch: ['<rootDir>/test/e2e/**/*.test.ts'],
      setupFilesAfterEnv: ['<rootDir>/test/setup-iam-checks.ts'],
    },
    {
      ...base,
      displayName: 'e2e-live',
      // One local runtime per test file (the handlers parse the environment once per module
      // registry), so a dialect is a project setting rather than a describe.each inside a file.
      // A file is here when what it asserts reads an answer that production's dialect words differently,
      // or when its issue asks for the behaviour end to end in both dialects:
      // - relay: listing (per-day prices, coin names), create_order's `{"code":0}` without an order id,
      //   my_orders, cancel_order, status, the price alert's spot prices;
      // - fleet-watch: my_orders statuses (paused vs stopped) and the lease-end cancel;
      // - lease-routes: set_spot_price's refusal texts (exceeded_max_step vs too_low_price) and currency;
      // - placement: refusals on HTTP 500 with a JSON body, orders listed late after `{"code":0}`;
      // - outbid-recovery: an outbid order is `paused` (spec) or offline while rented (live), the
      //   max-step refusal and prices per day (issue 23: e2e in both dialects);
      // - budgets: USD per hour from per-day prices, production's `spend` for billed hours (issue 24);
      // - standing-orders (issue 23), teams (issue 24) and orphan-orders (issue 20): their issues ask for
      //   both dialects, although their rules run on orders and servers already parsed by the reader;
      // - host-choice (issue 31): reliability, rating and prices read from either dialect's listing;
      // - ssh-login (issue 31): the login readiness probe against either dialect's order shapes;
      // - host-records (issue 31 §2): a host avoided after failed logins, in either dialect;
      // - settlement (issue 38 §9): a cancelled order settled to the cancel (the live dialect's `spend`);
      // - access (issue 37): keys, passwords, tokens and logins through either dialect's create_order and orders;
      // - restart and crash-points (issue 39): a killed npm start adopts the order in flight from either
      //   dialect's answers, and a cancel job is delivered again.
      testMatch: [
        '<rootDir>/test/e2e/relay.test.ts',
        '<rootDir>/test/e2e/fleet-watch.test.ts',
        '<rootDir>/test/e2e/lease-routes.test.ts',
        '<rootDir>/test/e2e/placement.test.ts',
        '<rootDir>/test/e2e/outbid-recovery.test.ts',
        '<rootDir>/test/e2e/budgets.test.ts',
        '<rootDir>/test/e2e/standing-orders.test.ts',
        '<rootDir>/test/e2e/standing-orders-cap.test.ts',
        '<rootDir>/test/e2e/teams.test.ts',
        '<rootDir>/test/e2e/orphan-orders.test.ts',
        '<rootDir>/test/e2e/host-choice.test.ts',
        '<rootDir>/test/e2e/ssh-login.test.ts',
        '<rootDir>/test/e2e/host-records.test.ts',
        '<rootDir>/test/e2e/settlement.test.ts',
        '<rootDir>/test/e2e/access.test.ts',
        '<rootDir>/test/e2e/restart.test.ts',
        '<rootDir>/test/e2e/crash-points.test.ts',
      ],
      setupFiles: [...base.setupFiles, '<rootDir>/test/setup-live-dialect.ts'],
      setupFilesAfterEnv: ['<rootDir>/test/setup-iam-checks.ts'],
    },
  ],
  testTimeout: 60000,
  // Longest first from committed durations (test/runner/sequencer.js): a clean clone has no jest cache.
  testSequencer: '<rootDir>/test/runner/sequencer.js',
  // Three workers per core. Most of an e2e file's time is waiting on sweeps, pacing and polls (relay.test:
  // 16.5 s of its 28 s idle), so one worker per core left the 2-core CI machine half idle. Measured on
  // that machine (2026-11-28, BENCHMARKS.md §16): quiet, ts-jest, 4 workers jest 461.6 s, 6 workers
  // 429.9 s; clean clone, swc, 4 workers 490.1 s, 6 workers 451.0 s. The two first clean-clone runs
  // with six each failed crash-points' resumed standing order once: a real bug the load exposed
  // (FindServer did not hold a resumed round's own server after a restart), fixed.
  // (A number, not '300%': Jest reads a percentage over 100 as that many workers.)
  maxWorkers: 3 * availableParallelism(),
};
