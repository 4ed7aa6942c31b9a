/**
 * The local runtime (`npm start`) for tests: ephemeral port, quiet, a known webhook secret and
 * short timings, so a create-order finishes in seconds instead of minutes.
 *
 * One runtime per test file: the handlers parse `process.env` once per module registry, and jest
 * gives each test file its own registry and its own copy of `process.env`.
 */
import { startLocalRuntime } from '../../local/runtime';
import type { LocalRuntime, LocalRuntimeOptions, SimulatorOptions } from '../../local/runtime';

export type { LocalRuntime } from '../../local/runtime';

/** The webhook secret every test runtime uses; sign with it (see signedPost in receivers.ts). */
export const TEST_WEBHOOK_SECRET = 'e2e-test-webhook-secret-4f1c9a';

/** Fast, deterministic settings; anything here can be overridden per test file. */
export const FAST_ENV: Readonly<Record<string, string>> = {
  WEBHOOK_SECRET: TEST_WEBHOOK_SECRET,
  ORDER_POLL_INTERVAL_SECONDS: '1',
  ORDER_READY_TIMEOUT_SECONDS: '30',
  JOB_RETRY_BASE_MS: '20',
  MARKETPLACE_TIMEOUT_MS: '5000',
  ALLOW_PRIVATE_CALLBACKS: 'true',
  POWERTOOLS_LOG_LEVEL: 'SILENT',
};

/** Simulator settings: orders become ready after 300 ms; pacing spacing of 20 ms instead of 1 s. */
export const FAST_SIMULATOR: SimulatorOptions = { seed: 42, readyDelayMs: 300, minIntervalMs: 20 };

export interface TestRuntimeOptions {
  readonly env?: Readonly<Record<string, string>>;
  readonly simulator?: SimulatorOptions | false;
}

/** Starts the full local runtime on port 0 with FAST_ENV and FAST_SIMULATOR (plus overrides). */
export const startTestRuntime = (options: TestRuntimeOptions = {}): Promise<LocalRuntime> => {
  const runtimeOptions: LocalRuntimeOptions = {
    port: 0,
    quiet: true,
    env: { ...FAST_ENV, ...options.env },
    simulator: options.simulator === false ? false : { ...FAST_SIMULATOR, ...options.simulator },
  };
  return startLocalRuntime(runtimeOptions);
};
