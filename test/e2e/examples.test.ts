/**
 * Every copy-paste snippet in examples/ (and docs/api.md, which shows them) runs against the local
 * runtime: curl + openssl, Node fetch + crypto, Python hmac + urllib, and the callback receiver.
 */
import { spawn } from 'node:child_process';
import type { ChildProcessWithoutNullStreams } from 'node:child_process';
import * as path from 'node:path';
import { Webhook } from 'standardwebhooks';
import { hmacHex, signedBytes } from '../../lambdas/domain/signing';
import { startLocalRuntime } from '../../local/runtime';
import type { LocalRuntime } from '../../local/runtime';

const SECRET = 'e2e-examples-secret-93c2';
const EXAMPLES = path.resolve(__dirname, '../../examples');

interface Run {
  code: number | null;
  stdout: string;
  stderr: string;
}

const run = (command: string, args: readonly string[], env: Record<string, string>): Promise<Run> =>
  new Promise((resolve, reject) => {
    const child = spawn(command, args, { env: { PATH: process.env.PATH ?? '', HOME: process.env.HOME ?? '', ...env } });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (c: Buffer) => (stdout += c.toString('utf8')));
    child.stderr.on('data', (c: Buffer) => (stderr += c.toString('utf8')));
    const killer = setTimeout(() => child.kill('SIGKILL'), 30_000);
    child.on('error', reject);
    child.on('close', (code) => {
      clearTimeout(killer);
      resolve({ code, stdout, stderr });
    });
    child.stdin.end();
  });

/** Starts examples/verify-callback.mjs on an ephemeral port; resolves once it prints its URL. */
const startVerifier = (
  callbackSecret: string,
): Promise<{ url: string; child: ChildProcessWithoutNullStreams; lines: () => string[]; stop: () => Promise<void> }> =>
  new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [path.join(EXAMPLES, 'verify-callback.mjs')], {
      env: { PATH: process.env.PATH ?? '', GPU_RELAY_CALLBACK_SECRET: callbackSecret, PORT: '0' },
    });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (c: Buffer) => (stdout += c.toString('utf8')));
    child.stderr.on('data', (c: Buffer) => {
      stderr += c.toString('utf8');
      const match = /listening on (http:\/\/\S+)/.exec(stderr);
      if (match) {
        resolve({
          url: match[1],
          child,
          lines: () => stdout.split('\n').filter(Boolean),
          stop: () =>
            new Promise((done) => {
              child.once('close', () => done());
              child.kill('SIGTERM');
            }),
        });
      }
    });
    child.on('error', reject);
    child.on('close', (code) => reject(new Error(`verify-callback.mjs exited early (${code}): ${stderr}`)));
  });

const waitUntil = async (check: () => boolean, timeoutMs: number): Promise<void> => {
  const deadline = Date.now() + timeoutMs;
  while (!check()) {
    if (Date.now() > deadline) throw new Error('condition not met in time');
    await new Promise((r) => setTimeout(r, 50));
  }
};

describe('Examples: signing snippets against the local runtime', () => {
  let runtime: LocalRuntime;
  const env = () => ({ GPU_RELAY_URL: runtime.url, GPU_RELAY_SECRET: SECRET });

  beforeAll(async () => {
    runtime = await startLocalRuntime({
      port: 0,
      quiet: true,
      simulator: { minIntervalMs: 50 },
      env: {
        WEBHOOK_SECRET: SECRET,
        // The deployed default (issue 29): the examples sign v2, so they work against AWS as they are.
        SIGNATURE_VERSIONS: 'v2',
        MAX_REQUESTS_PER_MINUTE: '600',
        ALLOW_PRIVATE_CALLBACKS: 'true',
        JOB_RETRY_BASE_MS: '10',
      },
    });
  }, 60_000);
  afterAll(async () => {
    await runtime?.close();
  });

  const snippets: [string, string, string[]][] = [
    ['curl + openssl', 'bash', [path.join(EXAMPLES, 'sign-request.sh')]],
    ['Node fetch + crypto', process.execPath, [path.join(EXAMPLES, 'sign-request.mjs')]],
    ['Python hmac + urllib', 'python3', [path.join(EXAMPLES, 'sign_request.py')]],
  ];

  describe.each(snippets)('%s', (_name, command, args) => {
    it('gets 202 queued for the default create-order body', async () => {
      const result = await run(command, args, env());
      expect(result.stderr.trim()).toBe('HTTP 202');
      expect(result.code).toBe(0);
      expect(JSON.parse(result.stdout)).toMatchObject({ status: 'queued', task_id: expect.any(String) });
    });

    it('gets 202 for another route and body', async () => {
      const result = await run(
        command,
        [...args, '/webhook/price-alert', '{"gpu_type": "ünïcode GPU", "target_price": 0.01}'],
        env(),
      );
      expect(result.stderr.trim()).toBe('HTTP 202');
      expect(JSON.parse(result.stdout)).toMatchObject({ status: 'queued' });
    });

    it('is refused with 401 when the secret is wrong', async () => {
      const result = await run(command, args, { ...env(), GPU_RELAY_SECRET: 'wrong-secret' });
      expect(result.stderr).toContain('HTTP 401');
      expect(result.code).not.toBe(0);
      expect(JSON.parse(result.stdout.trim())).toEqual({ error: 'Invalid signature' });
    });
  });

  describe('verify-callback.mjs', () => {
    it('verifies a real callback from the relay, signed with the key the runtime generated (CALLBACK_SIGNING_SECRET unset), and prints it once', async () => {
      expect(runtime.env.CALLBACK_SIGNING_SECRET).toMatch(/^whsec_[A-Za-z0-9+/]{43}=$/);
      const verifier = await startVerifier(runtime.env.CALLBACK_SIGNING_SECRET ?? '');
      try {
        const body = JSON.stringify({ callback_url: `${verifier.url}` });
        const sent = await run(
          process.execPath,
          [path.join(EXAMPLES, 'sign-request.mjs'), '/webhook/status', body],
          env(),
        );
        expect(sent.stderr.trim()).toBe('HTTP 202');
        await waitUntil(() => verifier.lines().length > 0, 45_000);
        const [line] = verifier.lines();
        expect(JSON.parse(line)).toMatchObject({
          result: expect.objectContaining({ total_orders: expect.any(Number) }),
        });
      } finally {
        await verifier.stop();
      }
    });

    it('rejects forgeries, request signatures and stale timestamps, and acknowledges a replayed delivery without processing it', async () => {
      const callbackSecret = `whsec_${Buffer.alloc(32, 4).toString('base64')}`;
      const verifier = await startVerifier(callbackSecret);
      try {
        const post = (body: string, headers: Record<string, string>) =>
          fetch(verifier.url, { method: 'POST', headers: { 'content-type': 'application/json', ...headers }, body });
        const body = '{"success":true,"order_id":1,"status":"cancelled"}';
        const sign = (secret: string, id: string, seconds: number) => ({
          'webhook-id': id,
          'webhook-timestamp': String(seconds),
          'webhook-signature': new Webhook(secret).sign(id, new Date(seconds * 1000), body),
        });
        const now = Math.floor(Date.now() / 1000);
        const good = sign(callbackSecret, 'd-1', now);
        const stale = sign(callbackSecret, 'd-2', now - 3600);
        const ts = String(now);
        const requestStyle = {
          'x-webhook-timestamp': ts,
          'x-webhook-signature': hmacHex(SECRET, signedBytes(body, ts)),
          'x-webhook-id': 'd-3',
        };

        expect((await post(body, sign(`whsec_${Buffer.alloc(32, 5).toString('base64')}`, 'd-1', now))).status).toBe(
          401,
        );
        expect((await post(body, { ...good, 'webhook-id': 'd-other' })).status).toBe(401);
        expect((await post(body, requestStyle)).status).toBe(401);
        expect((await post(body, {})).status).toBe(401);
        expect((await post(body, stale)).status).toBe(401);
        expect((await post(`${body} `, good)).status).toBe(401);
        expect((await post(body, good)).status).toBe(200);
        const replay = await post(body, good);
        expect(replay.status).toBe(200);
        expect(await replay.json()).toEqual({ ok: true, duplicate: true });
        await waitUntil(() => verifier.lines().length > 0, 5_000);
        expect(verifier.lines()).toEqual([JSON.stringify({ id: 'd-1', result: JSON.parse(body) })]);
      } finally {
        await verifier.stop();
      }
    });
  });
});
