import { callbackDeliveryId, HttpNotifier, type HttpNotifierOptions } from '../../../lambdas/adapters/http-notifier';
import { httpPost, type Transport } from '../../../lambdas/adapters/http-post';
import type { Resolver } from '../../../lambdas/adapters/ssrf-guard';
import * as observability from '../../../lambdas/adapters/observability';

// The metric functions as writable properties, so the tests can spy on them (a transpiler's CommonJS
// exports may be read-only getters).
jest.mock('../../../lambdas/adapters/observability', () => {
  const actual = jest.requireActual<typeof observability>('../../../lambdas/adapters/observability');
  return { __esModule: true, ...actual, countMetric: actual.countMetric, publishMetrics: actual.publishMetrics };
});
import { Webhook } from 'standardwebhooks';
import { hmacHex, signedBytes } from '../../../lambdas/domain/signing';
import type { TaskResult } from '../../../lambdas/domain/task';
import { startReceiver, type Receiver } from './receiver';

const SECRET = `whsec_${Buffer.alloc(32, 1).toString('base64')}`;
const PREVIOUS = `whsec_${Buffer.alloc(32, 2).toString('base64')}`;
const OTHER = `whsec_${Buffer.alloc(32, 3).toString('base64')}`;
/** Whether standardwebhooks verifies the delivery with `secret` (it checks the timestamp against the real clock). */
const verifies = (req: { headers: Record<string, unknown>; body: string }, secret: string, nowMs = NOW): boolean => {
  jest.useFakeTimers({
    now: nowMs,
    doNotFake: ['setImmediate', 'setTimeout', 'clearTimeout', 'nextTick', 'queueMicrotask'],
  });
  try {
    new Webhook(secret).verify(req.body, req.headers as Record<string, string>, { jsonParse: false });
    return true;
  } catch {
    return false;
  } finally {
    jest.useRealTimers();
  }
};
const NOW = 1_750_000_000_000;
const result: TaskResult = { success: true, order_id: 42, status: 'cancelled' };

describe('Adapter: HttpNotifier', () => {
  let receiver: Receiver;
  let sleeps: number[];
  let logs: string[];
  let metrics: { name: string; dimension?: { name: string; value: string } }[];

  beforeEach(async () => {
    receiver = await startReceiver();
    sleeps = [];
    logs = [];
    metrics = [];
    for (const level of ['debug', 'info', 'warn', 'error'] as const) {
      jest.spyOn(observability.logger, level).mockImplementation((...args: unknown[]) => {
        logs.push(JSON.stringify(args));
      });
    }
    jest.spyOn(observability, 'countMetric').mockImplementation((name, dimension) => {
      metrics.push({ name, dimension });
    });
  });
  afterEach(async () => {
    jest.restoreAllMocks();
    await receiver.close();
  });

  const notifier = (overrides: Partial<HttpNotifierOptions> = {}) =>
    new HttpNotifier({
      signingSecrets: async () => [SECRET, PREVIOUS],
      chat: async () => ({}),
      allowPrivate: true,
      sleep: async (ms) => {
        sleeps.push(ms);
      },
      now: () => NOW,
      ...overrides,
    });

  describe('callback', () => {
    it('POSTs the result signed per Standard Webhooks (webhook-id, webhook-timestamp, one v1 signature per secret)', async () => {
      // Act
      const delivered = await notifier().callback(`${receiver.base}/hooks/cb?token=abc`, 'task-1', result);
      // Assess
      expect(delivered).toBe(true);
      const [req] = receiver.requests;
      expect(req.method).toBe('POST');
      expect(JSON.parse(req.body)).toEqual(result);
      expect(req.headers['content-type']).toBe('application/json');
      expect(req.headers['user-agent']).toBe('gpu-relay');
      expect(req.headers['webhook-timestamp']).toBe(String(NOW / 1000));
      expect(req.headers['webhook-id']).toBe(callbackDeliveryId('task-1'));
      expect(String(req.headers['webhook-signature'])).toMatch(/^v1,[A-Za-z0-9+/]+=* v1,[A-Za-z0-9+/]+=*$/);
      // Current and previous secret each verify (a rotation does not break receivers); another does not.
      expect(verifies(req, SECRET)).toBe(true);
      expect(verifies(req, PREVIOUS)).toBe(true);
      expect(verifies(req, OTHER)).toBe(false);
      // Stale for a receiver 301 s later; a tampered body fails.
      expect(verifies(req, SECRET, NOW + 301_000)).toBe(false);
      expect(verifies({ ...req, body: req.body.replace('42', '43') }, SECRET)).toBe(false);
      // Nothing that looks like a request signature: no X-Webhook-* headers, no hex HMAC of <ts>.<body>.
      expect(Object.keys(req.headers).filter((h) => h.startsWith('x-webhook'))).toEqual([]);
      expect(String(req.headers['webhook-signature'])).not.toContain(
        hmacHex(SECRET, signedBytes(req.body, String(NOW / 1000))),
      );
      expect(metrics).toEqual([{ name: 'CallbackDeliveries', dimension: undefined }]);
    });

    it('retries a 500 with backoff, keeping the delivery id, then succeeds', async () => {
      // Prepare
      receiver.reply({ status: 500 }, { status: 503 }, { status: 204 });
      // Act
      const delivered = await notifier().callback(`${receiver.base}/cb`, 'task-2', result);
      // Assess
      expect(delivered).toBe(true);
      expect(receiver.requests).toHaveLength(3);
      expect(new Set(receiver.requests.map((r) => r.headers['webhook-id']))).toEqual(
        new Set([callbackDeliveryId('task-2')]),
      );
      expect(sleeps).toEqual([1_000, 2_000]);
    });

    it('sends a lifecycle event signed like a callback, with the event id on every retry', async () => {
      // Prepare
      receiver.reply({ status: 502 }, { status: 204 });
      const event = {
        event: 'order.lease_expired' as const,
        order_id: 7,
        task_id: 'task-e',
        occurred_at: NOW / 1000,
        lease_expires_at: NOW / 1000 - 5,
      };
      // Act
      const delivered = await notifier().send(`${receiver.base}/events`, 'lease_expired:7:1749999995', event);
      // Assess
      expect(delivered).toBe(true);
      expect(receiver.requests).toHaveLength(2);
      for (const req of receiver.requests) {
        expect(JSON.parse(req.body)).toEqual(event);
        expect(req.headers['webhook-id']).toBe('lease_expired:7:1749999995');
        expect(verifies(req, SECRET)).toBe(true);
      }
      // An event never reuses the task's callback delivery id: it is not the task's one result.
      expect(receiver.requests[0]?.headers['webhook-id']).not.toBe(callbackDeliveryId('task-e'));
    });

    it('retries a 429', async () => {
      receiver.reply({ status: 429 }, { status: 200 });
      expect(await notifier().callback(`${receiver.base}/cb`, 'task-3', result)).toBe(true);
      expect(receiver.requests).toHaveLength(2);
    });

    it('does not retry a 400 and counts the failure', async () => {
      receiver.reply({ status: 400 });
      expect(await notifier().callback(`${receiver.base}/cb`, 'task-4', result)).toBe(false);
      expect(receiver.requests).toHaveLength(1);
      expect(sleeps).toEqual([]);
      expect(metrics.map((m) => m.name)).toEqual(['CallbackFailures']);
    });

    it('gives up after the configured attempts', async () => {
      receiver.reply({ status: 502 });
      expect(await notifier().callback(`${receiver.base}/cb`, 'task-5', result)).toBe(false);
      expect(receiver.requests).toHaveLength(3);
      expect(sleeps).toEqual([1_000, 2_000]);
    });

    it('retries a receiver that does not answer in time', async () => {
      receiver.reply('hold');
      const delivered = await notifier({ callbackTimeoutMs: 100, callbackAttempts: 2 }).callback(
        `${receiver.base}/cb`,
        'task-6',
        result,
      );
      expect(delivered).toBe(false);
      expect(receiver.requests).toHaveLength(2);
      expect(logs.join('\n')).toContain('timeout');
    });

    it('retries network errors', async () => {
      const closed = await startReceiver();
      await closed.close();
      expect(await notifier({ callbackAttempts: 2 }).callback(`${closed.base}/cb`, 'task-7', result)).toBe(false);
      expect(sleeps).toEqual([1_000]);
      expect(logs.join('\n')).toContain('network error ECONNREFUSED');
    });

    it('follows no redirect', async () => {
      receiver.reply({ status: 302, headers: { Location: `${receiver.base}/elsewhere` } });
      expect(await notifier().callback(`${receiver.base}/cb`, 'task-8', result)).toBe(false);
      expect(receiver.requests.map((r) => r.path)).toEqual(['/cb']);
      expect(sleeps).toEqual([]); // a redirect is a failure, not retried
    });

    it('refuses a non-http(s) callback even when private addresses are allowed', async () => {
      expect(await notifier().callback('file:///etc/passwd', 'task-9', result)).toBe(false);
      expect(metrics.map((m) => m.name)).toEqual(['CallbackFailures']);
    });

    it('returns false without throwing when the secret cannot be read, is missing or unusable', async () => {
      const down = notifier({
        signingSecrets: async () => {
          throw new Error('secrets manager down');
        },
      });
      expect(await down.callback(`${receiver.base}/cb`, 'task-10', result)).toBe(false);
      expect(
        await notifier({ signingSecrets: async () => [] }).callback(`${receiver.base}/cb`, 'task-10', result),
      ).toBe(false);
      expect(
        await notifier({ signingSecrets: async () => ['whsec_'] }).callback(`${receiver.base}/cb`, 'task-10', result),
      ).toBe(false);
      expect(receiver.requests).toHaveLength(0);
      expect(metrics.map((m) => m.name)).toEqual(['CallbackFailures', 'CallbackFailures', 'CallbackFailures']);
    });
  });

  describe('SSRF guard (allowPrivate false)', () => {
    it('refuses loopback callbacks and chat URLs without sending anything', async () => {
      // Prepare
      const n = notifier({
        allowPrivate: false,
        chat: async () => ({ slack: `${receiver.base}/slack`, discord: `${receiver.base}/discord` }),
      });
      // Act
      const delivered = await n.callback(`${receiver.base}/cb`, 'task-11', result);
      await n.chat('hello');
      await n.slackResponse(`${receiver.base}/response`, 'done');
      // Assess
      expect(delivered).toBe(false);
      expect(receiver.requests).toHaveLength(0);
      expect(metrics).toEqual([
        { name: 'CallbackFailures', dimension: undefined },
        { name: 'ChatFailures', dimension: { name: 'Channel', value: 'slack' } },
        { name: 'ChatFailures', dimension: { name: 'Channel', value: 'discord' } },
      ]);
    });

    it('refuses a name that resolves to loopback at connect time', async () => {
      // Prepare: the default transport with a resolver that maps the name to the local receiver
      const lookup: Resolver = (_host, _opts, cb) => cb(null, [{ address: '127.0.0.1', family: 4 }]);
      const transport: Transport = (url, options) => httpPost(url, { ...options, lookup });
      const slack = `http://chat.example.com:${receiver.port}/slack`;
      const guarded = notifier({ allowPrivate: false, transport, chat: async () => ({ slack }) });
      const open = notifier({ allowPrivate: true, transport });
      // Act
      const delivered = await guarded.callback(`http://callbacks.example.com:${receiver.port}/cb`, 'task-12', result);
      await guarded.chat('hello');
      const control = await open.callback(`http://callbacks.example.com:${receiver.port}/cb`, 'task-12', result);
      // Assess: only the guard's verdict differs; a refused destination is not retried
      expect(delivered).toBe(false);
      expect(control).toBe(true);
      expect(receiver.requests).toHaveLength(1);
      expect(sleeps).toEqual([]);
      expect(logs.join('\n')).toContain('destination refused at connect time');
      expect(metrics.map((m) => m.name)).toEqual(['CallbackFailures', 'ChatFailures', 'CallbackDeliveries']);
    });

    it('passes allowPrivate to the transport', async () => {
      const seen: boolean[] = [];
      const transport: Transport = async (_url, options) => {
        seen.push(options.allowPrivate);
        return { status: 204, headers: {}, text: () => '' };
      };
      await notifier({ allowPrivate: false, transport }).callback('https://hooks.example.com/cb', 'task-14', result);
      await notifier({ allowPrivate: true, transport }).callback('https://hooks.example.com/cb', 'task-15', result);
      expect(seen).toEqual([false, true]);
    });
  });

  describe('chat', () => {
    it('sends Slack {text} and Discord {content} in parallel', async () => {
      const n = notifier({
        chat: async () => ({ slack: `${receiver.base}/slack`, discord: `${receiver.base}/discord` }),
      });
      await n.chat('Order 1 cancelled');
      const byPath = Object.fromEntries(receiver.requests.map((r) => [r.path, JSON.parse(r.body)]));
      expect(byPath).toEqual({ '/slack': { text: 'Order 1 cancelled' }, '/discord': { content: 'Order 1 cancelled' } });
    });

    it('keeps Discord content to 2000 characters', async () => {
      const n = notifier({ chat: async () => ({ discord: `${receiver.base}/discord` }) });
      await n.chat('z'.repeat(5000));
      const { content } = JSON.parse(receiver.requests[0].body) as { content: string };
      expect(content.length).toBeLessThanOrEqual(2000);
      expect(content.startsWith('zzz')).toBe(true);
    });

    it('skips unset URLs', async () => {
      await notifier({ chat: async () => ({ slack: `${receiver.base}/slack` }) }).chat('hi');
      expect(receiver.requests.map((r) => r.path)).toEqual(['/slack']);
      expect(metrics).toEqual([]);
    });

    it('honours a Discord 429 retry_after from the JSON body once', async () => {
      receiver.reply(
        {
          status: 429,
          body: JSON.stringify({ retry_after: 1.5, global: false }),
          headers: { 'Content-Type': 'application/json' },
        },
        { status: 204 },
      );
      await notifier({ chat: async () => ({ discord: `${receiver.base}/discord` }) }).chat('hi');
      expect(sleeps).toEqual([1_500]);
      expect(receiver.requests).toHaveLength(2);
      expect(metrics).toEqual([]);
    });

    it('honours a Discord Retry-After header', async () => {
      receiver.reply({ status: 429, headers: { 'Retry-After': '2' } }, { status: 204 });
      await notifier({ chat: async () => ({ discord: `${receiver.base}/discord` }) }).chat('hi');
      expect(sleeps).toEqual([2_000]);
      expect(receiver.requests).toHaveLength(2);
    });

    it('gives up when Discord asks to wait longer than the cap', async () => {
      receiver.reply({ status: 429, body: JSON.stringify({ retry_after: 30 }) });
      await notifier({ chat: async () => ({ discord: `${receiver.base}/discord` }) }).chat('hi');
      expect(sleeps).toEqual([]);
      expect(receiver.requests).toHaveLength(1);
      expect(metrics).toEqual([{ name: 'ChatFailures', dimension: { name: 'Channel', value: 'discord' } }]);
    });

    it('retries a Discord 429 only once', async () => {
      receiver.reply({ status: 429, body: JSON.stringify({ retry_after: 0.1 }) });
      await notifier({ chat: async () => ({ discord: `${receiver.base}/discord` }) }).chat('hi');
      expect(receiver.requests).toHaveLength(2);
      expect(metrics).toHaveLength(1);
    });

    it('logs and counts a Slack failure per channel, without throwing', async () => {
      receiver.reply({ status: 500 });
      await expect(
        notifier({ chat: async () => ({ slack: `${receiver.base}/slack` }) }).chat('hi'),
      ).resolves.toBeUndefined();
      expect(metrics).toEqual([{ name: 'ChatFailures', dimension: { name: 'Channel', value: 'slack' } }]);
    });
  });

  it('posts an in-channel reply to a Slack response_url', async () => {
    await notifier().slackResponse(`${receiver.base}/response`, 'Task t1: order 5 cancelled');
    expect(JSON.parse(receiver.requests[0].body)).toEqual({
      response_type: 'in_channel',
      replace_original: false,
      text: 'Task t1: order 5 cancelled',
    });
  });

  it('never logs secrets, chat URLs or callback paths', async () => {
    // Prepare: every delivery fails, so every failure path logs
    receiver.reply({ status: 500 });
    const slack = `${receiver.base}/services/T000/B000/SLACKSECRETTOKEN`;
    const discord = `${receiver.base}/api/webhooks/1/DISCORDSECRETTOKEN`;
    const n = notifier({ chat: async () => ({ slack, discord }) });
    // Act
    await n.callback(`${receiver.base}/cb/CALLBACKTOKEN?sig=QUERYTOKEN`, 'task-13', result);
    await n.chat('hello');
    await n.slackResponse(`${receiver.base}/commands/RESPONSETOKEN`, 'x');
    await notifier({ allowPrivate: false, chat: async () => ({ slack, discord }) }).chat('hello');
    // Assess
    const output = logs.join('\n');
    expect(logs.length).toBeGreaterThan(3);
    expect(output).toContain('task-13');
    for (const secret of [
      SECRET,
      'SLACKSECRETTOKEN',
      'DISCORDSECRETTOKEN',
      'CALLBACKTOKEN',
      'QUERYTOKEN',
      'RESPONSETOKEN',
    ]) {
      expect(output).not.toContain(secret);
    }
    for (const req of receiver.requests) expect(JSON.stringify(req.body)).not.toContain(SECRET);
  });
});
