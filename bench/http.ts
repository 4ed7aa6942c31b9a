/**
 * Bench 3: local HTTP throughput with autocannon against the local runtime (`npm start`'s code),
 * the per-address limit raised for the run: requests/s and p99 for signed webhooks and /health.
 */
import autocannon from 'autocannon';
import { hmacHex } from '../lambdas/domain/signing';
import { startLocalRuntime } from '../local/runtime';

const SECRET = 'bench-secret-http';
const DURATION_S = 10;
const CONNECTIONS = 10;

export interface HttpFigure {
  readonly route: string;
  readonly requestsPerSecond: number;
  readonly p50Ms: number;
  readonly p99Ms: number;
  readonly non2xx: number;
  readonly errors: number;
}

const run = (opts: autocannon.Options): Promise<autocannon.Result> =>
  new Promise((resolve, reject) => {
    autocannon(opts, (error, result) => (error ? reject(error) : resolve(result)));
  });

const figure = (route: string, r: autocannon.Result): HttpFigure => ({
  route,
  requestsPerSecond: r.requests.average,
  p50Ms: r.latency.p50,
  p99Ms: r.latency.p99,
  non2xx: r.non2xx,
  errors: r.errors,
});

export const benchHttp = async (): Promise<HttpFigure[]> => {
  const runtime = await startLocalRuntime({
    port: 0,
    quiet: true,
    env: {
      WEBHOOK_SECRET: SECRET,
      MAX_REQUESTS_PER_MINUTE: '100000000',
      POWERTOOLS_LOG_LEVEL: 'SILENT',
      POWERTOOLS_METRICS_DISABLED: 'true',
    },
    simulator: { seed: 3, readyDelayMs: 1000, minIntervalMs: 5 },
  });
  try {
    const health = await run({ url: `${runtime.url}/health`, connections: CONNECTIONS, duration: DURATION_S });
    // A signed status request: rate limit, signature, validation, task record and a real SQS send.
    const body = JSON.stringify({});
    const signed = await run({
      url: `${runtime.url}/webhook/status`,
      method: 'POST',
      body,
      headers: { 'content-type': 'application/json', 'x-webhook-signature': hmacHex(SECRET, body) },
      connections: CONNECTIONS,
      duration: DURATION_S,
    });
    return [figure('GET /health', health), figure('POST /webhook/status (signed)', signed)];
  } finally {
    await runtime.close();
  }
};
