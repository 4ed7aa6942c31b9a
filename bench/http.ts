/**
 * Bench 3: local HTTP throughput with autocannon against the local runtime (`npm start`'s code),
 * the per-address limit raised for the run: requests/s and p99 for signed webhooks and /health.
 */
import { request as httpRequest } from 'node:http';
import { performance } from 'node:perf_hooks';
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
  /** Answers by HTTP status (what the non-2xx were). */
  readonly statusCodes?: Readonly<Record<string, number>>;
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
  statusCodes: Object.fromEntries(
    Object.entries(r.statusCodeStats ?? {}).map(([code, stat]) => [code, stat?.count ?? 0]),
  ),
  errors: r.errors,
});

/**
 * The exact rolling window serializes requests from ONE address (one DynamoDB item per address), so
 * a load from a single address measures that bound, not the relay's throughput. This loop sends the
 * same signed request from 10 loopback addresses (127.0.0.2 … 127.0.0.11), one connection each.
 */
const multiAddressLoad = async (
  url: string,
  body: string,
  signature: string,
  addresses: number,
): Promise<HttpFigure> => {
  const target = new URL(url);
  const latencies: number[] = [];
  let non2xx = 0;
  let errors = 0;
  const until = Date.now() + DURATION_S * 1000;
  const one = (localAddress: string) =>
    new Promise<void>((resolve) => {
      const t = performance.now();
      const req = httpRequest(
        {
          host: target.hostname,
          port: target.port,
          path: target.pathname,
          method: 'POST',
          localAddress,
          headers: {
            'content-type': 'application/json',
            'content-length': Buffer.byteLength(body),
            'x-webhook-signature': signature,
          },
        },
        (res) => {
          res.resume();
          res.on('end', () => {
            latencies.push(performance.now() - t);
            if ((res.statusCode ?? 0) >= 300) non2xx += 1;
            resolve();
          });
        },
      );
      req.on('error', () => {
        errors += 1;
        resolve();
      });
      req.end(body);
    });
  await Promise.all(
    Array.from({ length: addresses }, async (_, i) => {
      while (Date.now() < until) await one(`127.0.0.${i + 2}`);
    }),
  );
  latencies.sort((a, b) => a - b);
  const at = (p: number) => latencies[Math.min(latencies.length - 1, Math.floor(p * latencies.length))] ?? 0;
  return {
    route: `POST ${target.pathname} (signed, ${addresses} addresses × 1 connection)`,
    requestsPerSecond: latencies.length / DURATION_S,
    p50Ms: at(0.5),
    p99Ms: at(0.99),
    non2xx,
    errors,
  };
};

export const benchHttp = async (): Promise<HttpFigure[]> => {
  const runtime = await startLocalRuntime({
    port: 0,
    quiet: true,
    env: {
      WEBHOOK_SECRET: SECRET,
      MAX_REQUESTS_PER_MINUTE: '600',
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
    const spread = await multiAddressLoad(`${runtime.url}/webhook/status`, body, hmacHex(SECRET, body), 10);
    return [
      figure('GET /health', health),
      figure('POST /webhook/status (signed, 1 address × 10 connections)', signed),
      spread,
    ];
  } finally {
    await runtime.close();
  }
};
