/**
 * Bench 4: marketplace efficiency. 10 concurrent create-orders through the local runtime (real
 * HTTP, real Step Functions definition, dynalite, fauxqs) against the simulator at a strict
 * 1 request/s per key, in either dialect (production's also allows one create_order per 5 s):
 * marketplace calls per order by endpoint, rate-limit answers, and the makespan beside the lower
 * bound those limits imply.
 */
import { createServer, type IncomingMessage } from 'node:http';
import type { AddressInfo } from 'node:net';
import { hmacHex } from '../lambdas/domain/signing';
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
  readonly makespanS: number;
  readonly lowerBoundS: number;
  /** makespan / lower bound (goal ≤ 1.2). */
  readonly ratio: number;
  /** What sets the lower bound: the 1 req/s budget of all calls, the readiness delay, or the 5 s create spacing. */
  readonly boundBy: 'calls' | 'ready delay' | 'create spacing';
  readonly createIntervalS: number;
  readonly readyDelayS: number;
  readonly pollIntervalS: number;
  /** CheckOrder invocations per order (from the poll interval and the measured ready time). */
  readonly checksPerOrder: number;
}

const readBody = (req: IncomingMessage): Promise<string> => new Promise((resolve) => {
  let data = '';
  req.on('data', (c) => { data += c; });
  req.on('end', () => resolve(data));
});

export const benchMarketplace = async (dialect: Dialect = 'spec'): Promise<MarketplaceFigures> => {
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
    },
    simulator: { seed: 7, readyDelayMs, minIntervalMs: 1000, rateLimit: true, dialect, createIntervalMs },
  });
  try {
    const sim = runtime.simulator;
    if (!sim) throw new Error('bench needs the embedded simulator');
    sim.control.reset();
    sim.control.setReadyDelay(readyDelayMs);
    const t0 = Date.now();
    const started = await Promise.all(Array.from({ length: ORDERS }, async (_, i) => {
      const body = JSON.stringify({ gpu_type: 'RTX', use_spot: true, callback_url: `${cbBase}/${i}` });
      const res = await fetch(`${runtime.url}/webhook/create-order`, {
        method: 'POST', body, headers: { 'content-type': 'application/json', 'x-webhook-signature': hmacHex(SECRET, body) },
      });
      if (res.status !== 202) throw new Error(`create-order answered ${res.status}: ${await res.text()}`);
      return i;
    }));
    const deadline = Date.now() + 280_000;
    while (results.size < started.length && Date.now() < deadline) await new Promise((r) => setTimeout(r, 250));
    const makespanS = (Math.max(...[...results.values()].map((r) => r.at)) - t0) / 1000;
    const counters = sim.control.counters();
    const calls = Object.values(counters.calls).reduce((a, b) => a + b, 0);
    const checksPerOrder = Math.ceil(readyDelayMs / 1000 / pollIntervalS) + 1;
    // Every call needs its own 1 s slot; no order can be ready before the simulator's delay; and
    // the last of N creates cannot be sent before (N - 1) create spacings, then it needs the delay.
    const bounds: [MarketplaceFigures['boundBy'], number][] = [
      ['calls', calls],
      ['ready delay', readyDelayMs / 1000],
      ['create spacing', ((ORDERS - 1) * createIntervalMs + readyDelayMs) / 1000],
    ];
    const [boundBy, lowerBoundS] = bounds.reduce((a, b) => (b[1] > a[1] ? b : a));
    return {
      dialect,
      orders: ORDERS,
      succeeded: [...results.values()].filter((r) => r.success).length,
      failures: [...results.values()].filter((r) => !r.success).map((r) => r.error ?? "unknown"),
      callsByEndpoint: counters.calls,
      callsPerOrder: calls / ORDERS,
      code5Answers: counters.rateLimited,
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
