/**
 * The gpu-relay CLI end to end against the local runtime (`npm start` in-process): every subcommand,
 * --wait receiving a real signed callback, polling, and bad flags.
 */
import { startLocalRuntime } from '../../local/runtime';
import type { LocalRuntime } from '../../local/runtime';
import { ROUTES } from '../../contract/routes';
import { startReceiver, TEST_CALLBACK_SECRET } from '../helpers/receivers';
import { runCli, stdoutJson } from '../unit/cli/run-cli';

const SECRET = 'e2e-cli-secret-4b1d';

interface Accepted {
  status: string;
  task_id: string;
  message?: string;
}

describe('CLI: gpu-relay against the local runtime', () => {
  let runtime: LocalRuntime;
  const env = () => ({
    GPU_RELAY_URL: runtime.url,
    GPU_RELAY_SECRET: SECRET,
    GPU_RELAY_CALLBACK_SECRET: TEST_CALLBACK_SECRET,
  });

  beforeAll(async () => {
    runtime = await startLocalRuntime({
      port: 0,
      quiet: true,
      // A quick marketplace: 20 req/s instead of 1, orders ready after 0.5 s.
      simulator: { minIntervalMs: 50, readyDelayMs: 500 },
      env: {
        WEBHOOK_SECRET: SECRET,
        CALLBACK_SIGNING_SECRET: TEST_CALLBACK_SECRET,
        MAX_REQUESTS_PER_MINUTE: '600',
        ALLOW_PRIVATE_CALLBACKS: 'true',
        ORDER_POLL_INTERVAL_SECONDS: '1',
        JOB_RETRY_BASE_MS: '10',
      },
    });
  }, 60_000);
  afterAll(async () => {
    await runtime?.close();
  });

  it('serves the OpenAPI document with every route at /openapi.json', async () => {
    const res = await fetch(`${runtime.url}/openapi.json`);
    expect(res.status).toBe(200);
    const doc = (await res.json()) as { openapi: string; paths: Record<string, Record<string, unknown>> };
    expect(doc.openapi).toMatch(/^3\.1\./);
    for (const route of ROUTES) expect(doc.paths[route.path]?.[route.method.toLowerCase()]).toBeDefined();
  });

  it('marketplace --json prints the summary and the models', async () => {
    const run = await runCli(['marketplace', '--json'], { env: env() });
    expect(run.code).toBe(0);
    const summary = stdoutJson(run) as {
      status: string;
      total_servers: number;
      summary: Record<string, unknown>;
      models: Record<string, { available: number; total: number }>;
    };
    expect(summary.status).toBe('ok');
    expect(summary.total_servers).toBeGreaterThan(0);
    expect(Object.keys(summary.summary).length).toBeGreaterThan(0);
    expect(summary.models['RTX 4090']).toMatchObject({ total: expect.any(Number) });
  });

  it('marketplace prints the models as a table, cheapest first, each name a --gpu value that rents', async () => {
    const run = await runCli(['marketplace'], { env: env() });
    expect(run.code).toBe(0);
    const lines = run.stdout.trim().split('\n');
    expect(lines[0]).toMatch(/^GPU TYPE\s+AVAILABLE\s+TOTAL\s+SPOT FROM\s+ON-DEMAND FROM$/);
    expect(lines.map((l) => l.split(/\s{2,}/)[0])).toContain('RTX 4090');
    const spot = lines
      .slice(1, -1)
      .map((l) => l.split(/\s{2,}/)[3])
      .filter((p) => p !== '-')
      .map((p) => Number(p.slice(1)));
    expect(spot).toEqual([...spot].sort((a, b) => a - b));
  });

  it.each([
    [['create-order', '--gpu', 'RTX 4090', '--max-price', '0.5']],
    [['create-order', '--gpu', 'A100', '--on-demand', '--signature', 'v1', '--no-timestamp']],
    [['create-order', '--gpu', 'A100', '--on-demand', '--signature', 'v1']],
    [['cancel-order', '987654']],
    [['price-alert', '--gpu', 'RTX 3090', '--target', '0.01']],
    [['status']],
  ])('%j is accepted with a task id', async (args) => {
    const run = await runCli(args, { env: env() });
    expect(run.stderr).toBe('');
    expect(run.code).toBe(0);
    const accepted = stdoutJson(run) as Accepted;
    expect(accepted.status).toBe('queued');
    expect(accepted.task_id).toEqual(expect.any(String));
  });

  it('task shows the record of a queued task', async () => {
    const queued = stdoutJson(await runCli(['status'], { env: env() })) as Accepted;
    const run = await runCli(['task', queued.task_id], { env: env() });
    expect(run.code).toBe(0);
    expect(stdoutJson(run)).toMatchObject({ task_id: queued.task_id, kind: 'status' });
  });

  it('status --wait receives the real signed callback and prints the result', async () => {
    const run = await runCli(['status', '--wait', '--json', '--timeout', '45'], { env: env(), timeoutMs: 50_000 });
    expect(run.code).toBe(0);
    expect(stdoutJson(run)).toMatchObject({ total_orders: expect.any(Number), orders: expect.any(Array) });
    expect(run.stderr).toContain('waiting for task');
    expect(run.stderr).not.toContain('warning');
  });

  it('create-order --wait rents a server and prints its ssh connection', async () => {
    const run = await runCli(['create-order', '--gpu', 'RTX 4090', '--wait', '--timeout', '45'], {
      env: env(),
      timeoutMs: 50_000,
    });
    expect(run.code).toBe(0);
    expect(stdoutJson(run)).toMatchObject({
      success: true,
      order_id: expect.any(Number),
      ssh_connection: expect.any(String),
      gpu: expect.arrayContaining([expect.stringContaining('4090')]),
    });
  });

  it('create-order --wait exits 1 when no server matches', async () => {
    const run = await runCli(['create-order', '--gpu', 'NoSuchGpu9000', '--wait', '--timeout', '45'], {
      env: env(),
      timeoutMs: 50_000,
    });
    expect(run.code).toBe(1);
    expect(stdoutJson(run)).toMatchObject({ success: false, error: expect.stringContaining('NoSuchGpu9000') });
  });

  it('status --wait --poll follows the task record to the end', async () => {
    const run = await runCli(['status', '--wait', '--json', '--poll', '--interval', '0.2', '--timeout', '45'], {
      env: env(),
      timeoutMs: 50_000,
    });
    expect(run.code).toBe(0);
    expect(stdoutJson(run)).toMatchObject({ total_orders: expect.any(Number) });
  });

  it('returns the same task for a repeated Idempotency-Key', async () => {
    const args = ['cancel-order', '123456', '--idempotency-key', `cli-e2e-${Date.now()}`];
    const first = stdoutJson(await runCli(args, { env: env() })) as Accepted;
    const second = stdoutJson(await runCli(args, { env: env() })) as Accepted;
    expect(second.task_id).toBe(first.task_id);
  });

  it('verify accepts a callback the relay really sent', async () => {
    // Prepare: a receiver records the relay's callback with its headers
    const receiver = await startReceiver();
    try {
      await runCli(['status', '--callback', `${receiver.url}/cb`], { env: env() });
      const callback = await receiver.waitFor((r) => r.path === '/cb', 45_000);
      // Act
      const headers = [
        '--id',
        String(callback.headers['webhook-id']),
        '--timestamp',
        String(callback.headers['webhook-timestamp']),
        '--signature',
        String(callback.headers['webhook-signature']),
      ];
      const run = await runCli(['verify', ...headers], {
        env: { GPU_RELAY_CALLBACK_SECRET: TEST_CALLBACK_SECRET },
        stdin: callback.body,
      });
      const forged = await runCli(['verify', ...headers], {
        env: { GPU_RELAY_CALLBACK_SECRET: TEST_CALLBACK_SECRET },
        stdin: callback.body.replace('total_orders', 'total_orderz'),
      });
      // The webhook secret (requests) does not verify a callback.
      const withWebhookSecret = await runCli(
        ['verify', ...headers, '--callback-secret', `whsec_${Buffer.from(SECRET.padEnd(24, '0')).toString('base64')}`],
        { stdin: callback.body },
      );
      // Assess
      expect(run.code).toBe(0);
      expect(forged.code).toBe(1);
      expect(withWebhookSecret.code).toBe(1);
    } finally {
      await receiver.close();
    }
  });

  it("exits 2 with the relay's error when the secret is wrong, without printing it", async () => {
    const run = await runCli(['status', '--secret', 'not-the-secret'], { env: { GPU_RELAY_URL: runtime.url } });
    expect(run.code).toBe(2);
    expect(run.stderr).toContain('HTTP 401: Invalid signature');
    expect(run.stdout + run.stderr).not.toContain('not-the-secret');
  });

  it('exits 2 on bad flags before calling the relay', async () => {
    const run = await runCli(['price-alert', '--gpu', 'A100', '--targett', '1'], { env: env() });
    expect(run.code).toBe(2);
    expect(run.stderr).toContain("Unknown option '--targett'");
    expect(run.stdout + run.stderr).not.toContain(SECRET);
  });
});
