/**
 * The local runtime (`npm start`) for tests: ephemeral port, quiet, a known webhook secret and
 * short timings, so a create-order finishes in seconds instead of minutes.
 *
 * One runtime per test file: the handlers parse `process.env` once per module registry, and jest
 * gives each test file its own registry and its own copy of `process.env`.
 */
import { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { DynamoDBDocumentClient, GetCommand } from '@aws-sdk/lib-dynamodb';
import { startLocalRuntime } from '../../local/runtime';
import type { LocalRuntime, LocalRuntimeOptions, SimulatorOptions } from '../../local/runtime';
import { parseDialect, type Dialect } from '../../local/simulator/dialect';
import { TEST_CALLBACK_SECRET } from './receivers';

export { TEST_CALLBACK_SECRET } from './receivers';

export type { LocalRuntime } from '../../local/runtime';
export type { Dialect } from '../../local/simulator/dialect';

/** Both marketplace dialects, for `describe.each(DIALECTS)` over behaviour that must hold in each. */
export const DIALECTS = ['spec', 'live'] as const satisfies readonly Dialect[];

/** The dialect this test process runs against: MARKETPLACE_DIALECT (the e2e-live jest project sets live), else spec. */
export const testDialect = (): Dialect => parseDialect(process.env.MARKETPLACE_DIALECT);

/** The webhook secret every test runtime uses; sign with it (see signedPost in receivers.ts). */
export const TEST_WEBHOOK_SECRET = 'e2e-test-webhook-secret-4f1c9a';

/** Fast, deterministic settings; anything here can be overridden per test file. */
export const FAST_ENV: Readonly<Record<string, string>> = {
  WEBHOOK_SECRET: TEST_WEBHOOK_SECRET,
  CALLBACK_SIGNING_SECRET: TEST_CALLBACK_SECRET,
  ORDER_POLL_INTERVAL_SECONDS: '1',
  ORDER_READY_TIMEOUT_SECONDS: '30',
  JOB_RETRY_BASE_MS: '20',
  MARKETPLACE_TIMEOUT_MS: '5000',
  // The relay paces at three times the simulator's 20 ms limit (FAST_SIMULATOR): a few ms of arrival
  // jitter on a loaded machine must not turn into rate-limit answers that tests count as calls.
  MARKETPLACE_MIN_INTERVAL_MS: '60',
  // Rate-limited answers widen the interval up to 10× the minimum, as production's 1 s → 10 s.
  MARKETPLACE_MAX_INTERVAL_MS: '600',
  ALLOW_PRIVATE_CALLBACKS: 'true',
  POWERTOOLS_LOG_LEVEL: 'SILENT',
};

/** Simulator settings: orders become ready after 300 ms; pacing spacing of 20 ms instead of 1 s. */
export const FAST_SIMULATOR: SimulatorOptions = { seed: 42, readyDelayMs: 300, minIntervalMs: 20 };

/**
 * Added in the live dialect: create_order spacing of 100 ms instead of production's 5 s (the runtime
 * passes it to the relay as MARKETPLACE_CREATE_INTERVAL_MS).
 */
export const FAST_LIVE_SIMULATOR: SimulatorOptions = { createIntervalMs: 100 };

/** Added to the relay's env in the live dialect: create_order paced at three times the simulator's spacing. */
export const FAST_LIVE_ENV: Readonly<Record<string, string>> = { MARKETPLACE_CREATE_INTERVAL_MS: '300' };

export interface TestRuntimeOptions {
  readonly env?: Readonly<Record<string, string>>;
  readonly simulator?: SimulatorOptions | false;
  /**
   * The embedded simulator's dialect. `live` also makes the runtime set the relay's
   * DEFAULT_CURRENCY=CLORE-Blockchain and MARKETPLACE_CREATE_INTERVAL_MS.
   * @default MARKETPLACE_DIALECT of the test process, else 'spec'
   */
  readonly dialect?: Dialect;
  /** The local API Gateway's integration timeout. @default 30 000 */
  readonly integrationTimeoutMs?: number;
}

/** Starts the full local runtime on port 0 with FAST_ENV and FAST_SIMULATOR (plus overrides). */
export const startTestRuntime = (options: TestRuntimeOptions = {}): Promise<LocalRuntime> => {
  const dialect = options.dialect ?? parseDialect(process.env.MARKETPLACE_DIALECT);
  const runtimeOptions: LocalRuntimeOptions = {
    port: 0,
    quiet: true,
    ...(options.integrationTimeoutMs !== undefined ? { integrationTimeoutMs: options.integrationTimeoutMs } : {}),
    env: { ...FAST_ENV, ...(dialect === 'live' ? FAST_LIVE_ENV : {}), ...options.env },
    simulator:
      options.simulator === false
        ? false
        : { ...FAST_SIMULATOR, ...(dialect === 'live' ? FAST_LIVE_SIMULATOR : {}), dialect, ...options.simulator },
  };
  return startLocalRuntime(runtimeOptions);
};

/**
 * One item of the runtime's table as stored (what a role that may read it sees), read through a
 * client of its own, or undefined.
 */
export const runtimeTableItem = async (
  runtime: LocalRuntime,
  pk: string,
): Promise<Record<string, unknown> | undefined> => {
  const doc = DynamoDBDocumentClient.from(
    new DynamoDBClient({
      endpoint: runtime.dynamo.endpoint,
      region: 'us-east-1',
      credentials: { accessKeyId: 'local', secretAccessKey: 'local' },
    }),
  );
  try {
    const { Item } = await doc.send(new GetCommand({ TableName: runtime.dynamo.tableName, Key: { pk } }));
    return Item;
  } finally {
    doc.destroy();
  }
};
