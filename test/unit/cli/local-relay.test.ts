/**
 * The CLI's quick path (issue 22 item 2): with no URL or secret set it reads the card `npm start`
 * publishes (.relay/local.json), only for a loopback URL, a live process and a private file; the
 * environment and flags always win, and the card's secrets are never printed.
 */
import { chmodSync, mkdtempSync, readFileSync, rmSync, statSync, writeFileSync, existsSync, mkdirSync } from 'node:fs';
import { tmpdir } from 'node:os';
import * as path from 'node:path';
import { signatureV2 } from '../../../lambdas/domain/signing';
import { publishLocalRelay } from '../../../local/local-relay-file';
import { LOCAL_RELAY_FILE, isLoopbackUrl } from '../../../contract/local-relay-file';
import { runCli, startFakeRelay } from './run-cli';
import type { FakeRelay } from './run-cli';

const CARD_SECRET = 'card-secret-91c2e7';
const CARD_CALLBACK_SECRET = `whsec_${Buffer.from('card-callback-signing-key-000001').toString('base64')}`;

describe('CLI: the local relay card', () => {
  let relay: FakeRelay;
  let dir: string;

  const writeCard = (card: Record<string, unknown>, mode = 0o600): string => {
    mkdirSync(path.join(dir, '.relay'), { recursive: true });
    const file = path.join(dir, LOCAL_RELAY_FILE);
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
    const run = await runCli(['create-order', '--gpu', 'RTX 4090', '--max-price', '0.5'], { cwd: sub, env: {} });
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
    // Assess
    expect(run.code).toBe(0);
    const [req] = relay.requests;
    expect(req.headers['x-webhook-signature']).toBe(
      signatureV2('env-secret', String(req.headers['x-webhook-timestamp']), 'POST', req.url, req.body),
    );
  });

  it.each(['GPU_RELAY_SECRET', 'WEBHOOK_SECRET'])(
    'ignores the card, URL included, when %s is set (the environment wins)',
    async (name) => {
      // Prepare: the card names the relay; with the card ignored the CLI goes to its default URL instead.
      writeCard(card());
      // Act
      await runCli(['status'], { cwd: dir, env: { [name]: 'env-secret' } });
      // Assess
      expect(relay.requests).toHaveLength(0);
    },
  );

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
        writeFileSync(path.join(dir, LOCAL_RELAY_FILE), '{', { mode: 0o600 });
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
    writeFileSync(published.file, JSON.stringify({ url: 'http://127.0.0.1:5001', pid: process.pid }));
    published.remove();
    expect(existsSync(published.file)).toBe(true);
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
