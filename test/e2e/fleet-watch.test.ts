/**
 * The fleet watch end to end (issue 14) against the local runtime, whose timer runs the watch handler
 * every second here: a leased order is warned, then cancelled once and reported once; a status change
 * made through the simulator's control API is reported with from/to, and "possibly outbid" for a spot
 * order. Runs in both marketplace dialects (jest projects `e2e` and `e2e-live`). Waits are on
 * conditions with deadlines (receivers' waitFor, sweep counts), never fixed sleeps.
 */
import { startTestRuntime, TEST_WEBHOOK_SECRET, testDialect } from '../helpers/local-runtime';
import type { LocalRuntime } from '../helpers/local-runtime';
import { deliveryVerifies, signedPost, startReceiver } from '../helpers/receivers';
import type { ReceivedRequest, Receiver } from '../helpers/receivers';
import { waitUntil } from '../helpers/until';

/** 7.2 s: long enough for a warning sweep, short enough for the test. */
const LEASE_HOURS = 0.002;
const WARNING_SECONDS = 5;
const WAIT_MS = 45_000;

const dialect = testDialect();

type Json = Record<string, unknown>;
const json = (r: ReceivedRequest): Json => (r.json ?? {}) as Json;
const isEvent = (r: ReceivedRequest, event: string, orderId: number): boolean =>
  json(r).event === event && json(r).order_id === orderId;
const isResult = (r: ReceivedRequest, path: string): boolean => r.path === path && json(r).event === undefined;

/** Resolves once `condition` holds (test/helpers/until.ts), by default within WAIT_MS. */
const until = (condition: () => boolean | Promise<boolean>, what: string, timeoutMs = WAIT_MS): Promise<void> =>
  waitUntil(condition, what, timeoutMs);

describe(`Fleet watch (${dialect} marketplace dialect)`, () => {
  let runtime: LocalRuntime;
  let callbacks: Receiver;
  let slack: Receiver;

  const slackText = (r: ReceivedRequest): string => String(json(r).text ?? '');
  /** Waits for two more sweeps to start: the one running now (if any) and one full sweep after it have ended. */
  const afterAnotherSweep = async (): Promise<void> => {
    const seen = runtime.watch.sweeps();
    await until(() => runtime.watch.sweeps() >= seen + 2, 'two more watch sweeps');
  };
  const createOrder = async (tag: string, extra: Json = {}): Promise<Json> => {
    const res = await signedPost(
      runtime.url,
      '/webhook/create-order',
      { gpu_type: 'RTX 4090', callback_url: `${callbacks.url}/${tag}`, ...extra },
      TEST_WEBHOOK_SECRET,
    );
    expect(res.status).toBe(202);
    const result = json(await callbacks.waitFor((r) => isResult(r, `/${tag}`), WAIT_MS));
    expect(result).toMatchObject({ success: true });
    return result;
  };

  beforeAll(async () => {
    [callbacks, slack] = await Promise.all([startReceiver(), startReceiver()]);
    runtime = await startTestRuntime({
      dialect,
      env: {
        WATCH_INTERVAL_SECONDS: '1',
        LEASE_WARNING_SECONDS: String(WARNING_SECONDS),
        SLACK_WEBHOOK_URL: `${slack.url}/slack`,
      },
    });
  });
  afterAll(async () => {
    await runtime?.close();
    await Promise.all([callbacks, slack].map((r) => r?.close()));
  });

  it('warns before a lease ends, then cancels the order once and reports it once', async () => {
    // Act
    const before = Math.floor(Date.now() / 1000);
    const result = await createOrder('lease', { max_hours: LEASE_HOURS });
    const orderId = result.order_id as number;
    const expiresAt = result.lease_expires_at as number;
    // Assess: the result names the end, counted from readiness
    expect(typeof expiresAt).toBe('number');
    expect(expiresAt).toBeGreaterThanOrEqual(before + Math.floor(LEASE_HOURS * 3600));
    expect(expiresAt).toBeLessThanOrEqual(Math.ceil(Date.now() / 1000) + Math.ceil(LEASE_HOURS * 3600));

    const warning = await callbacks.waitFor((r) => isEvent(r, 'order.lease_expiring', orderId), WAIT_MS);
    expect(warning.path).toBe('/lease');
    expect(json(warning)).toEqual({
      event: 'order.lease_expiring',
      order_id: orderId,
      task_id: expect.any(String),
      occurred_at: expect.any(Number),
      lease_expires_at: expiresAt,
    });
    await slack.waitFor((r) => slackText(r) === `Order ${orderId}: its lease ends in 1 min`, WAIT_MS);

    const expired = await callbacks.waitFor((r) => isEvent(r, 'order.lease_expired', orderId), WAIT_MS);
    expect(json(expired)).toEqual({
      event: 'order.lease_expired',
      order_id: orderId,
      task_id: json(warning).task_id,
      occurred_at: expect.any(Number),
      lease_expires_at: expiresAt,
    });
    expect(json(expired).occurred_at as number).toBeGreaterThanOrEqual(expiresAt);
    // Signed per Standard Webhooks with the callback signing secret, like a result.
    expect(deliveryVerifies(expired)).toBe(true);
    expect(expired.headers['x-webhook-signature']).toBeUndefined();
    await slack.waitFor(
      (r) => slackText(r) === `Order ${orderId} cancelled: its ${LEASE_HOURS} h lease ended`,
      WAIT_MS,
    );

    // Later sweeps change nothing: one cancel_order, one report, one event of each kind, one result.
    await afterAnotherSweep();
    expect(runtime.simulator?.control.counters().processed.cancel_order).toBe(1);
    expect(runtime.simulator?.control.orders().find((o) => o.order_id === orderId)).toMatchObject({
      completed: true,
      end_reason: 'cancelled',
    });
    const forOrder = callbacks.requests.filter((r) => r.path === '/lease');
    expect(forOrder.filter((r) => isEvent(r, 'order.lease_expired', orderId))).toHaveLength(1);
    expect(forOrder.filter((r) => isEvent(r, 'order.lease_expiring', orderId))).toHaveLength(1);
    expect(forOrder.filter((r) => isResult(r, '/lease'))).toHaveLength(1);
    expect(slack.requests.filter((r) => slackText(r).startsWith(`Order ${orderId} cancelled`))).toHaveLength(1);
    // Each delivery names itself: the event ids differ from each other and from the result's.
    const ids = forOrder.map((r) => r.headers['webhook-id']);
    expect(ids.every((id) => typeof id === 'string' && id.length > 0)).toBe(true);
    expect(new Set(ids).size).toBe(ids.length);
    // The order is no longer watched: its end is not reported again as a status change.
    expect(callbacks.requests.filter((r) => isEvent(r, 'order.status_changed', orderId))).toEqual([]);
  }, 120_000);

  it('reports a status change made through the marketplace, naming a stopped spot order "possibly outbid"', async () => {
    // Prepare: a spot order (the default) without a lease is watched from readiness.
    const result = await createOrder('watch');
    const orderId = result.order_id as number;
    expect(result.lease_expires_at).toBeUndefined();
    await afterAnotherSweep(); // the watch has seen it running
    // Act
    runtime.simulator?.control.setOrder(orderId, { online: false });
    // Assess
    const paused = json(await callbacks.waitFor((r) => isEvent(r, 'order.status_changed', orderId), WAIT_MS));
    expect(paused).toEqual({
      event: 'order.status_changed',
      order_id: orderId,
      task_id: expect.any(String),
      occurred_at: expect.any(Number),
      from: expect.any(String),
      to: expect.any(String),
    });
    expect(paused.to).not.toBe(paused.from);
    if (dialect === 'spec') expect(paused).toMatchObject({ from: 'running', to: 'paused' });
    const chat = await slack.waitFor(
      (r) => slackText(r).startsWith(`Order ${orderId} `) && slackText(r).includes(String(paused.to)),
      WAIT_MS,
    );
    expect(slackText(chat)).toContain('possibly outbid');

    // Act: the order ends at the marketplace
    runtime.simulator?.control.setOrder(orderId, { expired: true });
    // Assess: a second change, from where the first one left it
    await until(
      () => callbacks.requests.filter((r) => isEvent(r, 'order.status_changed', orderId)).length >= 2,
      'the second status change',
    );
    const changes = callbacks.requests.filter((r) => isEvent(r, 'order.status_changed', orderId)).map(json);
    expect(changes[1]).toMatchObject({ from: paused.to });
    await afterAnotherSweep();
    expect(callbacks.requests.filter((r) => isEvent(r, 'order.status_changed', orderId))).toHaveLength(2);
    expect(runtime.simulator?.control.counters().processed.cancel_order).toBe(1); // the relay cancelled nothing here
  }, 120_000);
});
