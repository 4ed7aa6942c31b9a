/**
 * No order the relay placed is left running without an owner (issue 20, item 5), end to end (jest
 * project `e2e`; why not `e2e-live` too: jest.config.js): a create_order lands while its answer is lost, and
 * the order stays out of my_orders past the relay's visibility window. The task fails; once the order
 * shows, the fleet watch (a sweep every second here) cancels it once and reports it once.
 */
import { startTestRuntime, TEST_WEBHOOK_SECRET, testDialect, type LocalRuntime } from '../helpers/local-runtime';
import { signedPost, startReceiver, type ReceivedRequest, type Receiver } from '../helpers/receivers';
import { uniqueServer } from '../helpers/sim-servers';
import { waitUntil } from '../helpers/until';

const dialect = testDialect();
const WAIT_MS = 60_000;
const VISIBLE_TIMEOUT_SECONDS = 2;
/** The order would show in my_orders this long after it was created; the test reveals it once the task has given up. */
const VISIBLE_DELAY_MS = 600_000;

type Json = Record<string, unknown>;
const json = (r: ReceivedRequest): Json => (r.json ?? {}) as Json;

/** Resolves once `condition` holds (test/helpers/until.ts), by default within WAIT_MS. */
const until = (condition: () => boolean | Promise<boolean>, what: string, timeoutMs = WAIT_MS): Promise<void> =>
  waitUntil(condition, what, timeoutMs);

describe(`Orders nobody kept (${dialect} marketplace dialect)`, () => {
  let runtime: LocalRuntime;
  let callbacks: Receiver;
  let slack: Receiver;
  const sim = () => {
    if (!runtime.simulator) throw new Error('the test runtime has no simulator');
    return runtime.simulator.control;
  };

  beforeAll(async () => {
    [callbacks, slack] = await Promise.all([startReceiver(), startReceiver()]);
    runtime = await startTestRuntime({
      dialect,
      env: {
        WATCH_INTERVAL_SECONDS: '1',
        ORDER_VISIBLE_TIMEOUT_SECONDS: String(VISIBLE_TIMEOUT_SECONDS),
        SLACK_WEBHOOK_URL: `${slack.url}/slack`,
      },
    });
  });
  afterAll(async () => {
    await runtime?.close();
    await Promise.all([callbacks, slack].map((r) => r?.close()));
  });

  it('fails the task, then cancels the order once it shows, once, and reports it once', async () => {
    // Prepare: one server matches; its create_order lands, the answer is lost, and the order shows late
    sim().addServer(uniqueServer(9951, 'ZETA Z9100', sim().nativeCoin));
    sim().setVisibleDelay(VISIBLE_DELAY_MS);
    sim().inject({ endpoint: 'create_order', kind: 'timeoutAfterSend' });
    const before = sim().counters().ordersCreated;
    // Act
    const res = await signedPost(
      runtime.url,
      '/webhook/create-order',
      { gpu_type: 'ZETA Z9100', callback_url: `${callbacks.url}/orphan` },
      TEST_WEBHOOK_SECRET,
    );
    expect(res.status).toBe(202);
    const taskId = String((res.json as Json).task_id);
    const result = await callbacks.waitFor((r) => r.path === '/orphan' && json(r).event === undefined, WAIT_MS);
    sim().setVisibleDelay(0);
    sim().revealOrders();
    // Assess: the task failed without a second order: the server was rented (by its own, invisible order)
    expect(json(result)).toEqual({
      success: false,
      error: 'No ZETA Z9100 available; tried server 9951 (server-already-rented)',
    });
    expect(sim().counters().ordersCreated - before).toBe(1);
    const orphan = sim()
      .orders()
      .find((o) => o.renting_server === 9951);
    if (!orphan) throw new Error('the simulator has no order on server 9951');

    // The order shows; the watch cancels it and reports it
    const event = await callbacks.waitFor((r) => json(r).event === 'order.orphan_cancelled', WAIT_MS);
    expect(event.path).toBe('/orphan');
    expect(json(event)).toEqual({
      event: 'order.orphan_cancelled',
      order_id: orphan.order_id,
      task_id: taskId,
      occurred_at: expect.any(Number),
    });
    const text = `Order ${orphan.order_id} cancelled: placed for task ${taskId}, which did not keep it`;
    await slack.waitFor((r) => json(r).text === text, WAIT_MS);
    expect(
      sim()
        .orders()
        .find((o) => o.order_id === orphan.order_id),
    ).toMatchObject({ completed: true, end_reason: 'cancelled' });

    // Once: later sweeps neither cancel nor report again
    const sweeps = runtime.watch.sweeps();
    await until(() => runtime.watch.sweeps() >= sweeps + 3, 'three more watch sweeps');
    expect(callbacks.requests.filter((r) => json(r).event === 'order.orphan_cancelled')).toHaveLength(1);
    expect(slack.requests.filter((r) => json(r).text === text)).toHaveLength(1);
    expect(sim().counters().processed.cancel_order ?? 0).toBe(1);
  });
});
