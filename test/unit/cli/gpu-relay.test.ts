import { Webhook } from 'standardwebhooks';
import { hmacHex, signatureMatches, signatureV2, signedBytes } from '../../../lambdas/domain/signing';
import { runCli, startFakeRelay, stdoutJson } from './run-cli';
import type { FakeRelay, RecordedRequest } from './run-cli';

const SECRET = 'unit-secret-7f3a9c';
/** The relay's callback signing secret (Standard Webhooks); callbacks are never signed with SECRET. */
const CALLBACK_SECRET = `whsec_${Buffer.from('unit-cli-callback-signing-key-01').toString('base64')}`;

/** Standard Webhooks headers of a delivery, as the relay sends them. */
const deliveryHeaders = (
  raw: string,
  opts: { secret?: string; id?: string; timestamp?: number } = {},
): Record<string, string> => {
  const seconds = opts.timestamp ?? Math.floor(Date.now() / 1000);
  const id = opts.id ?? 'delivery-1';
  return {
    'webhook-id': id,
    'webhook-timestamp': String(seconds),
    'webhook-signature': new Webhook(opts.secret ?? CALLBACK_SECRET).sign(id, new Date(seconds * 1000), raw),
  };
};

const signedCallback = async (
  url: string,
  body: unknown,
  opts: { secret?: string; id?: string; timestamp?: number } = {},
) => {
  const raw = JSON.stringify(body);
  const res = await fetch(url, {
    method: 'POST',
    headers: { 'content-type': 'application/json', ...deliveryHeaders(raw, opts) },
    body: raw,
  });
  return res.status;
};

const callbackUrlOf = (req: RecordedRequest): string =>
  (JSON.parse(req.body.toString('utf8')) as { callback_url: string }).callback_url;

describe('CLI: gpu-relay', () => {
  let relay: FakeRelay;
  const env = () => ({
    GPU_RELAY_URL: relay.url,
    GPU_RELAY_SECRET: SECRET,
    GPU_RELAY_CALLBACK_SECRET: CALLBACK_SECRET,
  });

  beforeEach(async () => {
    relay = await startFakeRelay();
  });
  afterEach(async () => {
    await relay.close();
  });

  describe('signing', () => {
    it('signs v2 by default: the method, the path and the exact body bytes it sends, with the timestamp it sends', async () => {
      // Act
      const run = await runCli(
        [
          'create-order',
          '--gpu',
          'RTX 4090',
          '--max-price',
          '0.5',
          '--on-demand',
          '--image',
          'img:1',
          '--env',
          'A=1',
          '--env',
          'B=x=y',
        ],
        { env: env() },
      );
      // Assess
      expect(run.code).toBe(0);
      const [req] = relay.requests;
      expect(req.method).toBe('POST');
      expect(req.url).toBe('/webhook/create-order');
      expect(JSON.parse(req.body.toString('utf8'))).toEqual({
        gpu_type: 'RTX 4090',
        max_price: 0.5,
        image: 'img:1',
        use_spot: false,
        env: { A: '1', B: 'x=y' },
      });
      const ts = String(req.headers['x-webhook-timestamp']);
      expect(ts).toMatch(/^\d+$/);
      expect(Math.abs(Number(ts) - Date.now() / 1000)).toBeLessThan(300);
      expect(req.headers['x-webhook-signature']).toBe(
        signatureV2(SECRET, ts, 'POST', '/webhook/create-order', req.body),
      );
      expect(req.headers['content-type']).toBe('application/json');
      expect(stdoutJson(run)).toEqual({ status: 'queued', task_id: 't-1', message: 'ok' });
    });

    it('signs v1 with --signature v1: `<timestamp>.<body>` (old relays)', async () => {
      const run = await runCli(['status', '--signature', 'v1'], { env: env() });
      expect(run.code).toBe(0);
      const [req] = relay.requests;
      const ts = String(req.headers['x-webhook-timestamp']);
      expect(signatureMatches([SECRET], signedBytes(req.body, ts), String(req.headers['x-webhook-signature']))).toBe(
        true,
      );
    });

    it('refuses --no-timestamp without --signature v1, and an unknown --signature (usage, nothing sent)', async () => {
      const bare = await runCli(['status', '--no-timestamp'], { env: env() });
      const unknown = await runCli(['status', '--signature', 'v3'], { env: env() });
      expect([bare.code, unknown.code]).toEqual([2, 2]);
      expect(bare.stderr).toContain('--no-timestamp needs --signature v1');
      expect(unknown.stderr).toContain('--signature must be v1 or v2');
      expect(relay.requests).toHaveLength(0);
    });

    it('signs the body alone with --signature v1 --no-timestamp', async () => {
      const run = await runCli(['status', '--signature', 'v1', '--no-timestamp'], { env: env() });
      expect(run.code).toBe(0);
      const [req] = relay.requests;
      expect(req.headers['x-webhook-timestamp']).toBeUndefined();
      expect(req.body.toString('utf8')).toBe('{}');
      expect(req.headers['x-webhook-signature']).toBe(hmacHex(SECRET, '{}'));
    });

    it('signs a bodiless GET v2 over GET, its path as sent (a base path of the relay URL kept) and an empty body', async () => {
      relay.respond(() => ({ status: 200, body: { task_id: 'abc-1', state: 'running' } }));
      const run = await runCli(['task', 'abc-1'], { env: { ...env(), GPU_RELAY_URL: `${relay.url}/prod/` } });
      expect(run.code).toBe(0);
      const [req] = relay.requests;
      expect(req.url).toBe('/prod/webhook/tasks/abc-1');
      const ts = String(req.headers['x-webhook-timestamp']);
      expect(req.headers['x-webhook-signature']).toBe(signatureV2(SECRET, ts, 'GET', '/prod/webhook/tasks/abc-1'));
    });

    it('signs the path of a bodiless GET with --signature v1 and keeps a base path of the relay URL', async () => {
      relay.respond(() => ({ status: 200, body: { task_id: 'abc-1', state: 'running' } }));
      const run = await runCli(['task', 'abc-1', '--signature', 'v1'], {
        env: { ...env(), GPU_RELAY_URL: `${relay.url}/prod/` },
      });
      expect(run.code).toBe(0);
      const [req] = relay.requests;
      expect(req.method).toBe('GET');
      expect(req.url).toBe('/prod/webhook/tasks/abc-1');
      const ts = String(req.headers['x-webhook-timestamp']);
      expect(req.headers['x-webhook-signature']).toBe(hmacHex(SECRET, `${ts}./prod/webhook/tasks/abc-1`));
      expect(stdoutJson(run)).toEqual({ task_id: 'abc-1', state: 'running' });
    });

    it('reads the secret from --secret, then GPU_RELAY_SECRET, then WEBHOOK_SECRET', async () => {
      await runCli(['status', '--signature', 'v1', '--no-timestamp', '--secret', 'flag-secret'], {
        env: { GPU_RELAY_URL: relay.url, GPU_RELAY_SECRET: 'env-secret' },
      });
      await runCli(['status', '--signature', 'v1', '--no-timestamp'], {
        env: { GPU_RELAY_URL: relay.url, WEBHOOK_SECRET: 'fallback-secret' },
      });
      expect(relay.requests.map((r) => r.headers['x-webhook-signature'])).toEqual([
        hmacHex('flag-secret', '{}'),
        hmacHex('fallback-secret', '{}'),
      ]);
    });

    it('sends the other task bodies and the Idempotency-Key header', async () => {
      await runCli(['cancel-order', '42', '--callback', 'https://example.com/cb', '--idempotency-key', 'k-1'], {
        env: env(),
      });
      await runCli(['price-alert', '--gpu', 'A100', '--target', '1.25'], { env: env() });
      const [cancel, alert] = relay.requests;
      expect(cancel.url).toBe('/webhook/cancel-order');
      expect(JSON.parse(cancel.body.toString('utf8'))).toEqual({
        order_id: 42,
        callback_url: 'https://example.com/cb',
      });
      expect(cancel.headers['idempotency-key']).toBe('k-1');
      expect(alert.url).toBe('/webhook/price-alert');
      expect(JSON.parse(alert.body.toString('utf8'))).toEqual({ gpu_type: 'A100', target_price: 1.25 });
      expect(alert.headers['idempotency-key']).toBeUndefined();
    });

    it('sends the lease and spot-price commands (issue 14 routes) with their bodies', async () => {
      await runCli(['create-order', '--gpu', 'A100', '--max-hours', '1.5'], { env: env() });
      await runCli(['extend-order', '42', '--hours', '0.25'], { env: env() });
      await runCli(['set-spot-price', '42', '--price', '1500', '--callback', 'https://example.com/cb'], { env: env() });
      const [create, extend, bid] = relay.requests;
      expect(JSON.parse(create.body.toString('utf8'))).toEqual({ gpu_type: 'A100', max_hours: 1.5 });
      expect(extend.url).toBe('/webhook/extend-order');
      expect(JSON.parse(extend.body.toString('utf8'))).toEqual({ order_id: 42, hours: 0.25 });
      expect(bid.url).toBe('/webhook/set-spot-price');
      expect(JSON.parse(bid.body.toString('utf8'))).toEqual({
        order_id: 42,
        desired_price: 1500,
        callback_url: 'https://example.com/cb',
      });
    });

    it('sends cancel-task with the task id of a standing order', async () => {
      const taskId = '6f1c0b1e-2a3b-4c5d-8e9f-0a1b2c3d4e5f';
      const run = await runCli(['cancel-task', taskId], { env: env() });
      expect(run.code).toBe(0);
      const [req] = relay.requests;
      expect(req.url).toBe('/webhook/cancel-task');
      expect(JSON.parse(req.body.toString('utf8'))).toEqual({ task_id: taskId });
    });

    it('calls the marketplace summary unsigned', async () => {
      relay.respond(() => ({ status: 200, body: { status: 'ok', summary: {}, total_servers: 0, total_available: 0 } }));
      const run = await runCli(['marketplace'], { env: { GPU_RELAY_URL: relay.url } });
      expect(run.code).toBe(0);
      expect(relay.requests[0].url).toBe('/webhook/marketplace');
      expect(relay.requests[0].headers['x-webhook-signature']).toBeUndefined();
      expect(stdoutJson(run)).toMatchObject({ status: 'ok', total_servers: 0 });
    });
  });

  describe('errors and exit codes', () => {
    it.each([
      [['create-order'], '--gpu is required'],
      [['create-order', '--gpu', 'A100', '--max-price', 'cheap'], "--max-price must be a positive number, got 'cheap'"],
      [['create-order', '--gpu', 'A100', '--target', '1'], 'create-order does not take --target'],
      [['create-order', '--gpu', 'A100', '--env', 'no-equals'], "--env takes NAME=VALUE, got 'no-equals'"],
      [['create-order', '--gpu', 'A100', '--env', 'URL=a&b'], 'env values must not contain "&" (--env URL)'],
      [['cancel-order', 'abc'], "ORDER_ID must be a positive integer, got 'abc'"],
      [['cancel-order'], 'expected exactly one ORDER_ID'],
      [['price-alert', '--gpu', 'A100'], '--target is required'],
      [['create-order', '--gpu', 'A100', '--max-hours', '721'], "--max-hours must be at most 720 hours, got '721'"],
      [['create-order', '--gpu', 'A100', '--max-hours', '0'], "--max-hours must be a positive number, got '0'"],
      [['extend-order', '42'], '--hours is required'],
      [['extend-order', '--hours', '2'], 'expected exactly one ORDER_ID'],
      [['set-spot-price', '42'], '--price is required'],
      [['set-spot-price', 'x1', '--price', '1'], "ORDER_ID must be a positive integer, got 'x1'"],
      [['status', '--bogus'], "Unknown option '--bogus'"],
      [['launch'], "unknown command 'launch'"],
      [[], 'missing command'],
      [['status', '--callback', 'ftp://x'], '--callback must be an http(s) URL'],
      [['status', '--wait', '--callback', 'https://example.com/cb'], '--wait sets callback_url to its own listener'],
      [['status', '--poll'], '--poll only makes sense with --wait'],
      [['status', '--wait', '--no-wait'], '--wait and --no-wait contradict each other'],
      [['create-order', '--gpu', 'A100', '--max-price', '-1'], "--max-price must be a positive number, got '-1'"],
      [['create-order', '--gpu', '--wait'], "--gpu needs a value, got the option '--wait'"],
      [['cancel-task'], 'expected exactly one TASK_ID'],
      [['cancel-task', '12'], "TASK_ID is the task id a create-order answered (a UUID), got '12'"],
      [['keys', 'list', '--budget-usd-per-day', '5'], '--budget-usd-per-day only makes sense with keys create'],
      [['keys', 'revoke', 'ci', '--ssh-key', 'k.pub'], '--ssh-key only makes sense with keys create'],
    ])('exits 2 with a clear message for %j and never prints the secret', async (args, message) => {
      // Act: the secret is both in the environment and on the command line
      const run = await runCli([...args, '--secret', SECRET], { env: env() });
      // Assess
      expect(run.code).toBe(2);
      expect(run.stderr).toContain(message);
      expect(run.stdout + run.stderr).not.toContain(SECRET);
      expect(relay.requests).toHaveLength(0);
    });

    it('hides a secret pasted where an argument belongs', async () => {
      const run = await runCli(['status', SECRET], { env: env() });
      expect(run.code).toBe(2);
      expect(run.stderr).toContain("unexpected argument '***'");
      expect(run.stdout + run.stderr).not.toContain(SECRET);
    });

    it('exits 2 and names the fix when no secret is configured', async () => {
      const run = await runCli(['status'], { env: { GPU_RELAY_URL: relay.url } });
      expect(run.code).toBe(2);
      expect(run.stderr).toContain('set GPU_RELAY_SECRET');
      expect(relay.requests).toHaveLength(0);
    });

    it('exits 2 on an HTTP error and shows the error text and Retry-After', async () => {
      relay.respond(() => ({ status: 429, body: { error: 'Rate limit exceeded' }, headers: { 'retry-after': '17' } }));
      const run = await runCli(['status'], { env: env() });
      expect(run.code).toBe(2);
      expect(run.stderr).toContain('HTTP 429: Rate limit exceeded (retry after 17 s)');
    });

    it('exits 2 on a 401 without printing the secret or the signature, even with --verbose', async () => {
      relay.respond(() => ({ status: 401, body: { error: 'Invalid signature' } }));
      const run = await runCli(['create-order', '--gpu', 'A100', '--verbose'], { env: env() });
      expect(run.code).toBe(2);
      expect(run.stderr).toContain('HTTP 401: Invalid signature');
      expect(run.stderr).toContain('x-webhook-signature: <redacted>');
      const sent = String(relay.requests[0].headers['x-webhook-signature']);
      expect(run.stdout + run.stderr).not.toContain(SECRET);
      expect(run.stdout + run.stderr).not.toContain(sent);
    });

    it('exits 2 when the relay cannot be reached', async () => {
      const url = relay.url;
      await relay.close();
      const run = await runCli(['marketplace'], { env: { GPU_RELAY_URL: url } });
      expect(run.code).toBe(2);
      expect(run.stderr).toContain(`cannot reach the relay at ${url}`);
      relay = await startFakeRelay(); // afterEach closes it
    });

    it('prints help and exits 0', async () => {
      const run = await runCli(['help', 'create-order']);
      expect(run.code).toBe(0);
      expect(run.stdout).toContain('create-order --gpu TYPE');
    });
  });

  describe('--wait', () => {
    it('listens for the signed callback, rejects a forgery, prints the result and exits 0', async () => {
      // Prepare: answer 202, then call back twice: a forgery first, then the real result
      const statuses: number[] = [];
      relay.respond(
        () => ({ status: 202, body: { status: 'queued', task_id: 'task-9', message: 'queued' } }),
        async (req) => {
          const url = callbackUrlOf(req);
          statuses.push(
            await signedCallback(
              url,
              { task_id: 'task-9', success: true, order_id: 1 },
              { secret: `whsec_${Buffer.alloc(32, 1).toString('base64')}` },
            ),
          );
          // A request-style signature (the webhook secret, X-Webhook-*) is no callback signature at all.
          const forged = JSON.stringify({ task_id: 'task-9', success: true, order_id: 2 });
          const ts = String(Math.floor(Date.now() / 1000));
          statuses.push(
            (
              await fetch(url, {
                method: 'POST',
                body: forged,
                headers: {
                  'x-webhook-timestamp': ts,
                  'x-webhook-signature': hmacHex(SECRET, signedBytes(forged, ts)),
                  'x-webhook-id': 'x',
                },
              })
            ).status,
          );
          statuses.push(
            await signedCallback(url, { task_id: 'task-9', total_orders: 0, active: 0, creating: 0, orders: [] }),
          );
          statuses.push(
            await signedCallback(url, { task_id: 'task-9', total_orders: 0, active: 0, creating: 0, orders: [] }),
          ); // a retried delivery
        },
      );
      // Act
      const run = await runCli(['status', '--wait', '--json'], { env: env() });
      // Assess
      expect(run.code).toBe(0);
      expect(callbackUrlOf(relay.requests[0])).toMatch(
        /^http:\/\/127\.0\.0\.1:\d+\/gpu-relay\/callback\/[0-9a-f]{24}$/,
      );
      expect(statuses.slice(0, 3)).toEqual([401, 401, 200]);
      expect(stdoutJson(run)).toEqual({ task_id: 'task-9', total_orders: 0, active: 0, creating: 0, orders: [] });
      expect(run.stderr).toContain('queued task task-9');
      expect(run.stderr).toContain('waiting for task task-9');
      expect(run.stdout + run.stderr).not.toContain(SECRET);
      expect(run.stdout + run.stderr).not.toContain(CALLBACK_SECRET.slice('whsec_'.length));
    });

    it('refuses to --wait for a callback without the callback signing secret, before sending anything', async () => {
      const run = await runCli(['status', '--wait'], { env: { GPU_RELAY_URL: relay.url, GPU_RELAY_SECRET: SECRET } });
      expect(run.code).toBe(2);
      expect(run.stderr).toContain('GPU_RELAY_CALLBACK_SECRET');
      expect(relay.requests).toHaveLength(0);
    });

    it('rejects a callback with a stale timestamp and exits 1 on a failed result', async () => {
      const statuses: number[] = [];
      relay.respond(
        () => ({ status: 202, body: { status: 'queued', task_id: 'mine', message: 'queued' } }),
        async (req) => {
          const url = callbackUrlOf(req);
          statuses.push(
            await signedCallback(
              url,
              { success: true, order_id: 1 },
              { timestamp: Math.floor(Date.now() / 1000) - 3600 },
            ),
          );
          statuses.push(
            await signedCallback(
              url,
              { success: false, error: 'No RTX 4090 available under $0.5/h' },
              { id: 'd-mine' },
            ),
          );
        },
      );
      const run = await runCli(['create-order', '--gpu', 'RTX 4090', '--max-price', '0.5', '--wait'], { env: env() });
      expect(statuses).toEqual([401, 200]);
      expect(run.stderr).toContain('replay?');
      // a failed task exits 1 and still prints its result
      expect(run.code).toBe(1);
      expect(stdoutJson(run)).toEqual({ success: false, error: 'No RTX 4090 available under $0.5/h' });
    });

    it('takes a callback that arrives before the 202 answer', async () => {
      relay.respond((req) => {
        // The progress line reads the task record meanwhile.
        if (req.method === 'GET') return { status: 200, body: { task_id: 'fast', state: 'running' } };
        // The relay calls back while the request is still open (a very fast task).
        void signedCallback(callbackUrlOf(req), { success: true, order_id: 3, status: 'cancelled' });
        return { status: 202, body: { status: 'queued', task_id: 'fast', message: 'queued' } };
      });
      const run = await runCli(['cancel-order', '3', '--wait'], { env: env() });
      expect(run.code).toBe(0);
      expect(stdoutJson(run)).toEqual({ success: true, order_id: 3, status: 'cancelled' });
    });

    it('builds the callback URL from --public-url', async () => {
      relay.respond(() => ({ status: 400, body: { error: 'callback_url refused' } }));
      const run = await runCli(['status', '--wait', '--public-url', 'https://tunnel.example.com/hooks/'], {
        env: env(),
      });
      expect(run.code).toBe(2);
      expect(callbackUrlOf(relay.requests[0])).toMatch(
        /^https:\/\/tunnel\.example\.com\/hooks\/gpu-relay\/callback\/[0-9a-f]{24}$/,
      );
    });

    it('polls the task with --poll until it is final', async () => {
      let polls = 0;
      relay.respond((req) => {
        if (req.method === 'POST')
          return { status: 202, body: { status: 'queued', task_id: 'p-1', message: 'queued' } };
        polls += 1;
        return polls < 3
          ? { status: 200, body: { task_id: 'p-1', state: 'running' } }
          : {
              status: 200,
              body: { task_id: 'p-1', state: 'succeeded', result: { success: true, order_id: 7, status: 'cancelled' } },
            };
      });
      const run = await runCli(['cancel-order', '7', '--wait', '--poll', '--interval', '0.05'], { env: env() });
      expect(run.code).toBe(0);
      expect(polls).toBe(3);
      expect(relay.requests.slice(1).every((r) => r.url === '/webhook/tasks/p-1')).toBe(true);
      expect(stdoutJson(run)).toEqual({ success: true, order_id: 7, status: 'cancelled' });
    });

    it('exits 1 when a polled task ends failed', async () => {
      relay.respond((req) =>
        req.method === 'POST'
          ? { status: 202, body: { status: 'queued', task_id: 'p-2', message: 'queued' } }
          : { status: 200, body: { task_id: 'p-2', state: 'failed', result: { success: false, error: 'boom' } } },
      );
      const run = await runCli(['status', '--wait', '--poll', '--interval', '0.05'], { env: env() });
      expect(run.code).toBe(1);
      expect(stdoutJson(run)).toEqual({ success: false, error: 'boom' });
    });

    it('gives up after --timeout with exit 1', async () => {
      const run = await runCli(['status', '--wait', '--timeout', '0.3'], { env: env() });
      expect(run.code).toBe(1);
      expect(run.stderr).toContain('timed out');
    });
  });

  describe('verify', () => {
    const body = '{"task_id":"t-1","success":true}';
    const args = (headers: Record<string, string>) => [
      'verify',
      '--id',
      headers['webhook-id'],
      '--timestamp',
      headers['webhook-timestamp'],
      '--signature',
      headers['webhook-signature'],
    ];

    it('accepts a valid Standard Webhooks signature, with the secret from --callback-secret or the environment', async () => {
      const headers = deliveryHeaders(body);
      const flag = await runCli([...args(headers), '--callback-secret', CALLBACK_SECRET], { stdin: body });
      const fromEnv = await runCli(args(headers), { stdin: body, env: { CALLBACK_SIGNING_SECRET: CALLBACK_SECRET } });
      expect([flag.code, fromEnv.code]).toEqual([0, 0]);
      expect(stdoutJson(flag)).toEqual({ valid: true });
      expect(flag.stdout + flag.stderr).not.toContain(CALLBACK_SECRET.slice('whsec_'.length));
    });

    it('rejects a tampered body and hints at a trailing newline', async () => {
      const run = await runCli(args(deliveryHeaders(body)), {
        stdin: `${body}\n`,
        env: { GPU_RELAY_CALLBACK_SECRET: CALLBACK_SECRET },
      });
      expect(run.code).toBe(1);
      expect(stdoutJson(run)).toEqual({ valid: false, reason: expect.stringContaining('ends with a newline') });
    });

    it('rejects another delivery id, and a correctly signed but stale timestamp as a replay', async () => {
      const env = { GPU_RELAY_CALLBACK_SECRET: CALLBACK_SECRET };
      const otherId = await runCli(args({ ...deliveryHeaders(body), 'webhook-id': 'another' }), { stdin: body, env });
      const stale = await runCli(args(deliveryHeaders(body, { timestamp: Math.floor(Date.now() / 1000) - 3600 })), {
        stdin: body,
        env,
      });
      expect([otherId.code, stale.code]).toEqual([1, 1]);
      expect(stdoutJson(otherId)).toEqual({ valid: false, reason: 'signature does not match' });
      expect(stdoutJson(stale)).toEqual({ valid: false, reason: expect.stringContaining('replay') });
    });

    it('exits 2 without --signature or without the callback signing secret', async () => {
      const headers = deliveryHeaders(body);
      const noSignature = await runCli(
        ['verify', '--id', 'x', '--timestamp', headers['webhook-timestamp'], '--callback-secret', CALLBACK_SECRET],
        { stdin: body },
      );
      const noSecret = await runCli(args(headers), { stdin: body, env: { GPU_RELAY_SECRET: SECRET } });
      expect([noSignature.code, noSecret.code]).toEqual([2, 2]);
      expect(noSignature.stderr).toContain('--signature is required');
      expect(noSecret.stderr).toContain('GPU_RELAY_CALLBACK_SECRET');
    });
  });
});
