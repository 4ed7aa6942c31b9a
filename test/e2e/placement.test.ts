/**
 * Placing orders against the production marketplace's habits, end to end (issue 20, items 2 and 4),
 * in both dialects (jest projects `e2e` and `e2e-live`): new orders that show in my_orders 20 s
 * late, and refusals that concern one host (production sends `currency-not-allowed` on HTTP 500
 * with a JSON body). Waits are on conditions with deadlines, never fixed sleeps.
 */
import { startTestRuntime, TEST_WEBHOOK_SECRET, testDialect, type LocalRuntime } from '../helpers/local-runtime';
import { signedPost, startReceiver, type ReceivedRequest, type Receiver } from '../helpers/receivers';
import { uniqueServer } from '../helpers/sim-servers';

const dialect = testDialect();
const WAIT_MS = 60_000;

type Json = Record<string, unknown>;
const json = (r: ReceivedRequest): Json => (r.json ?? {}) as Json;

describe(`Placing orders (${dialect} marketplace dialect)`, () => {
  let runtime: LocalRuntime;
  let callbacks: Receiver;
  const sim = () => {
    if (!runtime.simulator) throw new Error('the test runtime has no simulator');
    return runtime.simulator.control;
  };
  const create = async (tag: string, body: Json): Promise<Json> => {
    const res = await signedPost(runtime.url, '/webhook/create-order', { callback_url: `${callbacks.url}/${tag}`, ...body }, TEST_WEBHOOK_SECRET);
    expect(res.status).toBe(202);
    return json(await callbacks.waitFor((r) => r.path === `/${tag}` && json(r).event === undefined, WAIT_MS));
  };

  beforeAll(async () => {
    callbacks = await startReceiver();
    runtime = await startTestRuntime({ dialect, env: { ORDER_VISIBLE_TIMEOUT_SECONDS: '60' } });
  });
  afterAll(async () => {
    await runtime?.close();
    await callbacks?.close();
  });

  it('places one order per task when new orders show in my_orders 20 s late: three concurrent creates, three orders', async () => {
    // Prepare
    const before = sim().counters().ordersCreated;
    sim().setVisibleDelay(20_000);
    try {
      // Act
      const results = await Promise.all(['late-1', 'late-2', 'late-3'].map((tag) => create(tag, { gpu_type: 'RTX 4090' })));
      // Assess: three successes on three orders, and no fourth order was ever created
      for (const result of results) expect(result).toMatchObject({ success: true, status: 'running' });
      const orderIds = results.map((r) => r.order_id);
      expect(new Set(orderIds).size).toBe(3);
      expect(sim().counters().ordersCreated - before).toBe(3);
      const placed = sim().orders().filter((o) => orderIds.includes(o.order_id));
      expect(placed.map((o) => o.completed)).toEqual([false, false, false]);
    } finally {
      sim().setVisibleDelay(0);
    }
  });

  it('moves on to the next host when one refuses on HTTP 500 with a JSON body, and names each server tried when all do', async () => {
    // Prepare: three servers only this test's GPU type matches, in marketplace order
    const coin = sim().nativeCoin;
    for (const id of [9901, 9902, 9903]) sim().addServer(uniqueServer(id, 'ZETA Z9000', coin));
    sim().inject({ endpoint: 'create_order', kind: 'code', code: 6, error: 'currency-not-allowed', status: 500 });
    // Act
    const moved = await create('refused-once', { gpu_type: 'ZETA Z9000' });
    // Assess
    expect(moved).toMatchObject({ success: true, server_id: 9902 });

    // Prepare: the remaining two refuse, each for its own reason
    sim().inject({ endpoint: 'create_order', kind: 'code', code: 6, error: 'currency-not-allowed', status: 500 });
    sim().setServer(9903, { online: false });
    const createdBefore = sim().counters().ordersCreated;
    // Act
    const failed = await create('refused-all', { gpu_type: 'ZETA Z9000' });
    // Assess: one failure naming every server tried and why; nothing was placed
    expect(failed).toEqual({
      success: false,
      error: 'No ZETA Z9000 available; tried server 9901 (currency-not-allowed), server 9903 (server-offline)',
    });
    expect(sim().counters().ordersCreated).toBe(createdBefore);
  });
});
