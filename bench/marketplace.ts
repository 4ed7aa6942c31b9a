/**
 * Bench 4: marketplace efficiency. 10 concurrent create-orders through the local runtime (real
 * HTTP, real Step Functions definition, dynalite, fauxqs) against the simulator at a strict
 * 1 request/s per key, in either dialect (production's also allows one create_order per 5 s):
 * marketplace calls per order by endpoint, rate-limit answers, and the makespan beside the lower
 * bound those limits imply.
 *
 * Bench 8 (issue 20 item 8, `pacing` / `pacing-live`) is the same run against a simulator that allows
 * one request per 2 s while the relay starts at MARKETPLACE_MIN_INTERVAL_MS=1000: its adaptive pacing
 * has to find the limit (rate-limited answers) and then keep to it (makespan).
 */
import { createServer, type IncomingMessage } from 'node:http';
import type { AddressInfo } from 'node:net';
import { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { DynamoDBDocumentClient, GetCommand } from '@aws-sdk/lib-dynamodb';
import { hmacHex } from '../lambdas/domain/signing';
import { apiKeyId } from '../lambdas/marketplace/key-id';
import { keys } from '../contract/resources';
import { startLocalRuntime } from '../local/runtime';
import type { Dialect } from '../local/simulator/dialect';

const ORDERS = 10;
const SECRET = 'bench-secret-marketplace';

export interface MarketplaceFigures {
  readonly dialect: Dialect;
  readonly orders: number;
  readonly succeeded: number;
  readonly failures: string[];
  readonly callsByEndpoint: Record<string, number>;
  readonly callsPerOrder: number;
  readonly code5Answers: number;
  /** Calls the simulator processed (rate-limited answers excluded): each needed its own slot. */
  readonly processedCalls: number;
  /** The simulator's limit (one request per this many ms per key) and the relay's starting interval. */
  readonly marketplaceIntervalMs: number;
  readonly relayMinIntervalMs: number;
  /** The shared pacing item after the run: the widened interval and when it last widened (s after the start), if it did. */
  readonly pacing: { readonly intervalMs?: number; readonly lastWidenedAtS?: number };
  readonly makespanS: number;
  readonly lowerBoundS: number;
  /** makespan / lower bound (goal ≤ 1.2). */
  readonly ratio: number;
  /** What sets the lower bound: one marketplace slot per processed call, the readiness delay, or the 5 s create spacing. */
  readonly boundBy: 'calls' | 'ready delay' | 'create spacing';
  readonly createIntervalS: number;
  readonly readyDelayS: number;
  readonly pollIntervalS: number;
  /** CheckOrder invocations per order (from the poll interval and the measured ready time). */
  readonly checksPerOrder: number;
}

const readBody = (req: IncomingMessage): Promise<string> =>
  new Promise((resolve) => {
    let data = '';
    req.on('data', (c) => {
      data += c;
    });
    req.on('end', () => resolve(data));
  });

export interface MarketplaceBenchOptions {
  /** The simulator allows one request per this many ms per key. @default 1000 */
  readonly marketplaceIntervalMs?: number;
  /** The relay's MARKETPLACE_MIN_INTERVAL_MS. @default the simulator's */
  readonly relayMinIntervalMs?: number;
}

export const benchMarketplace = async (
  dialect: Dialect = 'spec',
  options: MarketplaceBenchOptions = {},
): Promise<MarketplaceFigures> => {
  const marketplaceIntervalMs = options.marketplaceIntervalMs ?? 1_000;
  const relayMinIntervalMs = options.relayMinIntervalMs ?? marketplaceIntervalMs;
  const readyDelayMs = 10_000;
  const pollIntervalS = 5;
  // Production's create_order limit in the live dialect; the spec has none.
  const createIntervalMs = dialect === 'live' ? 5_000 : 0;
  const results = new Map<string, { success: boolean; at: number; error?: string }>();
  const receiver = createServer(async (req, res) => {
    const body = JSON.parse(await readBody(req)) as { success?: boolean };
    const id = String(req.url).split('/').pop() ?? '';
    results.set(id, { success: body.success === true, at: Date.now(), error: (body as { error?: string }).error });
    res.writeHead(204).end();
  });
  await new Promise<void>((r) => receiver.listen(0, '127.0.0.1', r));
  const cbBase = `http://127.0.0.1:${(receiver.address() as AddressInfo).port}/cb`;
  const runtime = await startLocalRuntime({
    port: 0,
    quiet: true,
    env: {
      WEBHOOK_SECRET: SECRET,
      ORDER_POLL_INTERVAL_SECONDS: String(pollIntervalS),
      MAX_ORDERS_PER_HOUR: '100',
      ALLOW_PRIVATE_CALLBACKS: 'true',
      POWERTOOLS_LOG_LEVEL: 'SILENT',
      POWERTOOLS_METRICS_DISABLED: 'true',
      MARKETPLACE_MIN_INTERVAL_MS: String(relayMinIntervalMs),
    },
    simulator: {
      seed: 7,
      readyDelayMs,
      minIntervalMs: marketplaceIntervalMs,
      rateLimit: true,
      dialect,
      createIntervalMs,
    },
  });
  try {
    const sim = runtime.simulator;
    if (!sim) throw new Error('bench needs the embedded simulator');
    sim.control.reset();
    sim.control.setReadyDelay(readyDelayMs);
    const t0 = Date.now();
    const started = await Promise.all(
      Array.from({ length: ORDERS }, async (_, i) => {
        const body = JSON.stringify({ gpu_type: 'RTX', use_spot: true, callback_url: `${cbBase}/${i}` });
        const res = await fetch(`${runtime.url}/webhook/create-order`, {
          method: 'POST',
          body,
          headers: { 'content-type': 'application/json', 'x-webhook-signature': hmacHex(SECRET, body) },
        });
        if (res.status !== 202) throw new Error(`create-order answered ${res.status}: ${await res.text()}`);
        return i;
      }),
    );
    const deadline = Date.now() + 280_000;
    while (results.size < started.length && Date.now() < deadline) await new Promise((r) => setTimeout(r, 250));
    const makespanS = (Math.max(...[...results.values()].map((r) => r.at)) - t0) / 1000;
    const counters = sim.control.counters();
    const processedCalls = Object.values(counters.processed).reduce((a, b) => a + b, 0);
    const pacing = await pacingItem(runtime.dynamo, sim.apiKey);
    const checksPerOrder = Math.ceil(readyDelayMs / 1000 / pollIntervalS) + 1;
    // Every processed call needs its own slot of the marketplace's interval (a rate-limited answer
    // needed none: it was refused); no order can be ready before the simulator's delay; and the last
    // of N creates cannot be sent before (N - 1) create spacings, then it needs the delay.
    const bounds: [MarketplaceFigures['boundBy'], number][] = [
      ['calls', (processedCalls * marketplaceIntervalMs) / 1000],
      ['ready delay', readyDelayMs / 1000],
      ['create spacing', ((ORDERS - 1) * createIntervalMs + readyDelayMs) / 1000],
    ];
    const [boundBy, lowerBoundS] = bounds.reduce((a, b) => (b[1] > a[1] ? b : a));
    return {
      dialect,
      orders: ORDERS,
      succeeded: [...results.values()].filter((r) => r.success).length,
      failures: [...results.values()].filter((r) => !r.success).map((r) => r.error ?? 'unknown'),
      callsByEndpoint: counters.calls,
      callsPerOrder: Object.values(counters.calls).reduce((a, b) => a + b, 0) / ORDERS,
      code5Answers: counters.rateLimited,
      processedCalls,
      marketplaceIntervalMs,
      relayMinIntervalMs,
      pacing: {
        ...(pacing.interval_ms !== undefined ? { intervalMs: pacing.interval_ms } : {}),
        ...(pacing.widened_at !== undefined ? { lastWidenedAtS: (pacing.widened_at - t0) / 1000 } : {}),
      },
      makespanS,
      lowerBoundS,
      ratio: makespanS / lowerBoundS,
      boundBy,
      createIntervalS: createIntervalMs / 1000,
      readyDelayS: readyDelayMs / 1000,
      pollIntervalS,
      checksPerOrder,
    };
  } finally {
    await runtime.close();
    receiver.close();
  }
};

/** The API key's shared pacing item as the run left it (lambdas/adapters/dynamodb/dynamodb-pacing-gate.ts). */
const pacingItem = async (
  dynamo: { endpoint: string; tableName: string },
  apiKey: string,
): Promise<{ interval_ms?: number; widened_at?: number }> => {
  const client = new DynamoDBClient({
    endpoint: dynamo.endpoint,
    region: 'us-east-1',
    credentials: { accessKeyId: 'local', secretAccessKey: 'local' },
  });
  try {
    const { Item } = await DynamoDBDocumentClient.from(client).send(
      new GetCommand({ TableName: dynamo.tableName, Key: { pk: keys.pacing(apiKeyId(apiKey)) } }),
    );
    return { interval_ms: Item?.interval_ms as number | undefined, widened_at: Item?.widened_at as number | undefined };
  } finally {
    client.destroy();
  }
};
