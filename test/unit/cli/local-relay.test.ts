/**
 * The CLI's quick path (issue 22 item 2, issue 28): it reads the cards `npm start` publishes
 * (.relay/local-<port>.json), only for a loopback URL, a live process and a private file; each value
 * not set (URL, webhook secret, callback signing secret) comes from the card whose URL matches, the
 * environment and flags always win, and the card's secrets are never printed (`env` excepted).
 */
import { chmodSync, mkdtempSync, readFileSync, rmSync, statSync, writeFileSync, existsSync, mkdirSync } from 'node:fs';
import { tmpdir } from 'node:os';
import * as path from 'node:path';
import { signatureV2 } from '../../../lambdas/domain/signing';
import { publishLocalRelay } from '../../../local/local-relay-file';
import { isLoopbackUrl, localRelayFile, portOfUrl } from '../../../contract/local-relay-file';
import { runCli, startFakeRelay } from './run-cli';
import type { FakeRelay } from './run-cli';

const CARD_SECRET = 'card-secret-91c2e7';
const CARD_CALLBACK_SECRET = `whsec_${Buffer.from('card-callback-signing-key-000001').toString('base64')}`;

describe('CLI: the local relay card', () => {
  let relay: FakeRelay;
  let dir: string;

  const writeCard = (card: Record<string, unknown>, mode = 0o600): string => {
    mkdirSync(path.join(dir, '.relay'), { recursive: true });
    const file = path.join(dir, localRelayFile(portOfUrl(String(card.url)) ?? 0));
    writeFileSync(file, JSON.stringify(card));
    chmodSync(file, mode);
    return file;
  };
  const card = (over: Record<string, unknown> = {}) => ({
    url: relay.url,
    webhook_secret: CARD_SECRET,
    callback_signing_secret: CARD_CALLBACK_SECRET,
    pid: process.pid,
    started_at: new Date().toISOString(),
    ...over,
  });

  beforeEach(async () => {
    relay = await startFakeRelay();
    dir = mkdtempSync(path.join(tmpdir(), 'gpu-relay-card-'));
  });
  afterEach(async () => {
    await relay.close();
    rmSync(dir, { recursive: true, force: true });
  });

  it("signs with the card's secret and sends to the card's URL when nothing is set, from a subfolder too", async () => {
    // Prepare
    writeCard(card());
    const sub = path.join(dir, 'a', 'b');
    mkdirSync(sub, { recursive: true });
    // Act
    const run = await runCli(['create-order', '--gpu', 'RTX 4090', '--max-price', '0.5', '--no-wait'], {
      cwd: sub,
      env: {},
    });
    // Assess
    expect(run.code).toBe(0);
    const [req] = relay.requests;
    expect(req.url).toBe('/webhook/create-order');
    expect(req.headers['x-webhook-signature']).toBe(
      signatureV2(CARD_SECRET, String(req.headers['x-webhook-timestamp']), 'POST', req.url, req.body),
    );
  });

  it("verifies the --wait callback with the card's callback signing secret", async () => {
    writeCard(card());
    const { Webhook } = await import('standardwebhooks');
    relay.respond(
      () => ({ status: 202, body: { status: 'queued', task_id: 't-9' } }),
      async (req) => {
        const url = (JSON.parse(req.body.toString('utf8')) as { callback_url: string }).callback_url;
        const raw = JSON.stringify({ success: true, order_id: 7 });
        const now = new Date();
        await fetch(url, {
          method: 'POST',
          body: raw,
          headers: {
            'webhook-id': 'd-1',
            'webhook-timestamp': String(Math.floor(now.getTime() / 1000)),
            'webhook-signature': new Webhook(CARD_CALLBACK_SECRET).sign('d-1', now, raw),
          },
        });
      },
    );
    const run = await runCli(['create-order', '--gpu', 'RTX 4090', '--wait'], { cwd: dir, env: {} });
    expect(run.code).toBe(0);
    expect(JSON.parse(run.stdout)).toEqual({ success: true, order_id: 7 });
  });

  it('ignores the card when GPU_RELAY_URL is set (the environment wins)', async () => {
    // Prepare: the card names a closed port; the environment names the relay.
    writeCard(card({ url: 'http://127.0.0.1:1' }));
    // Act
    const run = await runCli(['status'], {
      cwd: dir,
      env: { GPU_RELAY_URL: relay.url, GPU_RELAY_SECRET: 'env-secret' },
    });
    expect(run.stdout).toContain('t-1'); // no card for this URL: no wait by default, the 202 is printed
    // Assess
    expect(run.code).toBe(0);
    const [req] = relay.requests;
    expect(req.headers['x-webhook-signature']).toBe(
      signatureV2('env-secret', String(req.headers['x-webhook-timestamp']), 'POST', req.url, req.body),
    );
  });

  it.each(['GPU_RELAY_SECRET', 'WEBHOOK_SECRET'])(
    "with only %s set, sends to the card's URL signed with that secret",
    async (name) => {
      // Prepare
      writeCard(card());
      // Act
      const run = await runCli(['status', '--no-wait'], { cwd: dir, env: { [name]: 'env-secret' } });
      // Assess
      expect(run.code).toBe(0);
      const [req] = relay.requests;
      expect(req.headers['x-webhook-signature']).toBe(
        signatureV2('env-secret', String(req.headers['x-webhook-timestamp']), 'POST', req.url, req.body),
      );
    },
  );

  /** Calls the CLI's --wait listener back with a result signed by the card's callback signing secret. */
  const callBackSigned = async (req: { body: Buffer }, result: unknown): Promise<void> => {
    const { Webhook } = await import('standardwebhooks');
    const url = (JSON.parse(req.body.toString('utf8')) as { callback_url: string }).callback_url;
    const raw = JSON.stringify(result);
    const now = new Date();
    await fetch(url, {
      method: 'POST',
      body: raw,
      headers: {
        'webhook-id': 'd-2',
        'webhook-timestamp': String(Math.floor(now.getTime() / 1000)),
        'webhook-signature': new Webhook(CARD_CALLBACK_SECRET).sign('d-2', now, raw),
      },
    });
  };

  it("--key ci2 --secret S: sends to the card's URL as ci2 and verifies --wait with the card's callback secret", async () => {
    // Prepare
    writeCard(card());
    relay.respond(
      (req) =>
        req.method === 'POST'
          ? { status: 202, body: { status: 'queued', task_id: 't-3' } }
          : { status: 200, body: { task_id: 't-3', state: 'running' } },
      async (req) => {
        if (req.method === 'POST') await callBackSigned(req, { success: true, order_id: 8 });
      },
    );
    // Act
    const run = await runCli(
      ['create-order', '--gpu', 'RTX 4090', '--key', 'ci2', '--secret', 'rk_ci2_secret', '--wait'],
      { cwd: dir, env: {} },
    );
    // Assess
    expect(run.code).toBe(0);
    expect(JSON.parse(run.stdout)).toEqual({ success: true, order_id: 8 });
    const [req] = relay.requests;
    expect(req.headers['x-webhook-key-id']).toBe('ci2');
    // The listener takes the result only: no lifecycle events to it once the CLI has exited.
    expect(JSON.parse(req.body.toString('utf8'))).toMatchObject({ lifecycle_events: false });
    expect(req.headers['x-webhook-signature']).toBe(
      signatureV2('rk_ci2_secret', String(req.headers['x-webhook-timestamp']), 'POST', req.url, req.body),
    );
  });

  it("--key ci2 without a secret never signs with the card's webhook secret", async () => {
    writeCard(card());
    const run = await runCli(['status', '--key', 'ci2'], { cwd: dir, env: {} });
    expect(run.code).toBe(2);
    expect(run.stderr).toContain('no webhook secret');
    expect(relay.requests).toHaveLength(0);
  });

  it.each([
    ['the same URL', (url: string) => url],
    ['localhost for 127.0.0.1', (url: string) => url.replace('127.0.0.1', 'localhost')],
  ])("--url naming a card's relay (%s) takes that card's secret", async (_what, urlOf) => {
    // Prepare: two relays run here; the one asked for is not the first card.
    writeCard(card({ url: 'http://127.0.0.1:1', webhook_secret: 'other-relay-secret' }));
    writeCard(card());
    // Act
    const run = await runCli(['status', '--url', urlOf(relay.url), '--no-wait'], { cwd: dir, env: {} });
    // Assess
    expect(run.code).toBe(0);
    const [req] = relay.requests;
    expect(req.headers['x-webhook-signature']).toBe(
      signatureV2(CARD_SECRET, String(req.headers['x-webhook-timestamp']), 'POST', req.url, req.body),
    );
  });

  it('with several local relays and no URL set, asks for --url', async () => {
    writeCard(card({ url: 'http://127.0.0.1:1' }));
    writeCard(card());
    const run = await runCli(['status'], { cwd: dir, env: {} });
    expect(run.code).toBe(2);
    expect(run.stderr).toContain('2 local relays are running here');
    expect(run.stderr).toContain('--url');
    expect(relay.requests).toHaveLength(0);
  });

  it('waits for the result by default and prints status as a table; --no-wait returns at once', async () => {
    // Prepare
    writeCard(card());
    const result = {
      total_orders: 2,
      active: 1,
      creating: 1,
      orders: [
        { order_id: 41, status: 'running', ssh: 'ssh -p 2222 root@127.0.0.1', lease_expires_at: 1_900_000_000 },
        { order_id: 42, status: 'creating_order', ssh: null },
      ],
    };
    relay.respond(
      (req) =>
        req.method === 'POST'
          ? { status: 202, body: { status: 'queued', task_id: 't-4' } }
          : { status: 200, body: { task_id: 't-4', state: 'running' } },
      async (req) => {
        if (req.method === 'POST') await callBackSigned(req, result);
      },
    );
    // Act
    const waited = await runCli(['status'], { cwd: dir, env: {} });
    const json = await runCli(['status', '--json'], { cwd: dir, env: {} });
    const quick = await runCli(['status', '--no-wait'], { cwd: dir, env: {} });
    // Assess
    expect(waited.code).toBe(0);
    const lines = waited.stdout.trim().split('\n');
    expect(lines[0]).toMatch(/^ORDER\s+STATUS\s+LEASE ENDS\s+SSH$/);
    expect(lines[1]).toMatch(/^41\s+running\s+2030-03-17 17:46 UTC\s+ssh -p 2222 root@127\.0\.0\.1$/);
    expect(lines[2]).toMatch(/^42\s+creating_order\s+-\s+-$/);
    expect(lines[3]).toBe('2 orders: 1 running, 1 being created');
    expect(JSON.parse(json.stdout)).toEqual(result);
    expect(quick.code).toBe(0);
    expect(JSON.parse(quick.stdout)).toEqual({ status: 'queued', task_id: 't-4' });
    const posts = relay.requests.filter((r) => r.method === 'POST');
    expect(posts.map((r) => 'callback_url' in JSON.parse(r.body.toString('utf8')))).toEqual([true, true, false]);
  });

  it('env prints the export line of the local relay, secrets included', async () => {
    writeCard(card());
    const run = await runCli(['env'], { cwd: dir, env: {} });
    expect(run.code).toBe(0);
    expect(run.stdout).toBe(
      `export GPU_RELAY_URL=${relay.url} GPU_RELAY_SECRET=${CARD_SECRET} CALLBACK_SIGNING_SECRET=${CARD_CALLBACK_SECRET}\n`,
    );
  });

  it('env without a running local relay says to start one', async () => {
    const run = await runCli(['env'], { cwd: dir, env: {} });
    expect(run.code).toBe(2);
    expect(run.stderr).toContain('no local relay is running here');
    expect(run.stdout).toBe('');
  });

  it("never sends the card's secret to a URL set by the user", async () => {
    writeCard(card({ url: 'http://127.0.0.1:1' }));
    const run = await runCli(['status'], { cwd: dir, env: { GPU_RELAY_URL: relay.url } });
    expect(run.code).toBe(2);
    expect(run.stderr).toContain('no webhook secret');
    expect(relay.requests).toHaveLength(0);
  });

  it.each([
    [
      'a URL that is not loopback',
      () => writeCard(card({ url: 'http://relay.example.com:5000' })),
      'its URL is not a loopback address',
    ],
    ['a file others may read', () => writeCard(card(), 0o644), 'others may read it'],
    ['a process that is gone', () => writeCard(card({ pid: 2 ** 22 + 12_345 })), 'no longer running'],
    [
      'a file that is not JSON',
      () => {
        mkdirSync(path.join(dir, '.relay'), { recursive: true });
        writeFileSync(path.join(dir, localRelayFile(5000)), '{', { mode: 0o600 });
      },
      'not JSON',
    ],
  ])('ignores a card with %s, says why, and never prints its secrets', async (_what, write, why) => {
    // Prepare
    write();
    // Act
    const run = await runCli(['status', '--verbose'], { cwd: dir, env: {} });
    // Assess
    expect(run.code).toBe(2);
    expect(run.stderr).toContain(why);
    expect(run.stderr).toContain('no webhook secret');
    expect(relay.requests).toHaveLength(0);
    for (const secret of [CARD_SECRET, CARD_CALLBACK_SECRET, CARD_CALLBACK_SECRET.slice(6)]) {
      expect(run.stdout + run.stderr).not.toContain(secret);
    }
  });

  it("never prints the card's secrets, even with --verbose and an error echoing the answer", async () => {
    writeCard(card());
    relay.respond(() => ({ status: 400, body: { error: `bad ${CARD_SECRET} ${CARD_CALLBACK_SECRET}` } }));
    const run = await runCli(['status', '--verbose'], { cwd: dir, env: {} });
    expect(run.code).toBe(2);
    expect(run.stderr).toContain('using the local relay');
    for (const secret of [CARD_SECRET, CARD_CALLBACK_SECRET, CARD_CALLBACK_SECRET.slice(6)]) {
      expect(run.stdout + run.stderr).not.toContain(secret);
    }
  });
});

describe('Function: publishLocalRelay', () => {
  let dir: string;
  beforeEach(() => {
    dir = mkdtempSync(path.join(tmpdir(), 'gpu-relay-publish-'));
  });
  afterEach(() => rmSync(dir, { recursive: true, force: true }));

  const runtime = {
    url: 'http://127.0.0.1:5000',
    env: { WEBHOOK_SECRET: 'w-secret', CALLBACK_SIGNING_SECRET: 'whsec_abc' },
  };

  it('writes a private card in a git-ignored folder and removes it on stop', () => {
    // Act
    const published = publishLocalRelay(runtime, dir, new Date('2026-01-02T03:04:05Z'));
    // Assess
    expect(statSync(published.file).mode & 0o777).toBe(0o600);
    expect(statSync(path.join(dir, '.relay')).mode & 0o777).toBe(0o700);
    expect(readFileSync(path.join(dir, '.relay', '.gitignore'), 'utf8')).toBe('*\n');
    expect(JSON.parse(readFileSync(published.file, 'utf8'))).toEqual({
      url: 'http://127.0.0.1:5000',
      webhook_secret: 'w-secret',
      callback_signing_secret: 'whsec_abc',
      pid: process.pid,
      started_at: '2026-01-02T03:04:05.000Z',
    });
    published.remove();
    expect(existsSync(published.file)).toBe(false);
  });

  it('leaves a card another npm start has written since', () => {
    const published = publishLocalRelay(runtime, dir);
    expect(path.basename(published.file)).toBe('local-5000.json');
    writeFileSync(published.file, JSON.stringify({ url: 'http://127.0.0.1:5000', pid: process.pid + 1 }));
    published.remove();
    expect(existsSync(published.file)).toBe(true);
  });

  it('keeps one card per port: a second relay neither overwrites nor removes the first one', () => {
    const first = publishLocalRelay(runtime, dir);
    const second = publishLocalRelay({ ...runtime, url: 'http://127.0.0.1:5001' }, dir);
    expect(second.file).not.toBe(first.file);
    second.remove();
    expect(existsSync(first.file)).toBe(true);
    expect(existsSync(second.file)).toBe(false);
  });

  it('refuses to publish a relay that is not on a loopback address', () => {
    expect(() => publishLocalRelay({ ...runtime, url: 'http://10.0.0.5:5000' }, dir)).toThrow('must be loopback');
  });

  it.each([
    ['http://127.0.0.1:5000', true],
    ['http://localhost:5000/x', true],
    ['http://[::1]:5000', true],
    ['http://127.1.2.3', true],
    ['http://10.0.0.1:5000', false],
    ['https://relay.example.com', false],
    ['http://127.0.0.1.example.com', false],
    ['ftp://127.0.0.1', false],
    ['not a url', false],
  ])('isLoopbackUrl(%s) is %s', (url, expected) => {
    expect(isLoopbackUrl(url)).toBe(expected);
  });
});
