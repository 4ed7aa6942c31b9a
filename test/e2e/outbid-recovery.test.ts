/**
 * Outbid recovery (issue 23 item 1) end to end in both dialects (jest projects `e2e` and `e2e-live`),
 * through the simulator's control API (`outbid`, the raise step, the recorded set_spot_price calls),
 * with the fleet watch sweeping every second:
 * - `rebid`: an outbid spot order runs again at a higher bid below the ceiling, raised in steps the
 *   marketplace accepts (a too-big step is refused with `exceeded_max_step` and the relay follows the
 *   stated step); order.outbid and one order.rebid per accepted raise, each delivered once;
 * - a ceiling (max_price) too low: the bid stops at the ceiling and order.recovery_failed is reported once;
 * - `replace`: a new order runs on another server, the lost one is cancelled, the lease moves to the
 *   new order (extend-order on it counts from the lost order's end), order.outbid and order.replaced
 *   each once; the task view shows the new order;
 * - `rebid_then_replace` with a ceiling too low for the rebid: the replacement runs;
 * - `replace` that finds no other server: order.recovery_failed once, the lost order is left as it was;
 * - on_outbid `rebid` without a spot order or without max_price is a 400; so is `replace` without a spot order.
 * Waits are on conditions with deadlines (callbacks, sweep counts), never fixed sleeps.
 */
import { bidCeiling } from '../../lambdas/domain/recovery/outbid-recovery';
import {
  runtimeTableItem,
  startTestRuntime,
  TEST_WEBHOOK_SECRET,
  testDialect,
  type LocalRuntime,
} from '../helpers/local-runtime';
import { signedPost, startReceiver, type Receiver } from '../helpers/receivers';
import { uniqueServer } from '../helpers/sim-servers';
import { e2eCalls, isResult, json, type Json } from '../helpers/e2e-calls';
import { generateSshKeyPair } from '../helpers/ssh-keys';

/** The caller's public key of the replace case (issue 37). */
const REPLACE_KEY = generateSshKeyPair('replace@e2e').publicKey.trim();

const dialect = testDialect();
const WAIT_MS = 60_000;
/** The simulator's largest raise per set_spot_price in these tests: 5 % of the current bid (the relay's own step is 10 %). */
const RAISE_STEP = 0.05;

describe(`Outbid recovery (${dialect} marketplace dialect)`, () => {
  let runtime: LocalRuntime;
  let callbacks: Receiver;
  const { until, sim, taskView, moreSweeps } = e2eCalls(
    () => runtime,
    () => callbacks,
    WAIT_MS,
  );
  const events = (tag: string, name: string): Json[] =>
    callbacks.requests.filter((r) => r.path === `/${tag}` && json(r).event === name).map(json);
  /** A running spot order on a server of its own, placed with `body`, and seen running by the watch. */
  const runningOrder = async (
    tag: string,
    serverId: number,
    gpu: string,
    body: Json,
  ): Promise<{ orderId: number; taskId: string; result: Json }> => {
    sim().addServer(uniqueServer(serverId, gpu, sim().nativeCoin));
    const res = await signedPost(
      runtime.url,
      '/webhook/create-order',
      { gpu_type: gpu, callback_url: `${callbacks.url}/${tag}`, ...body },
      TEST_WEBHOOK_SECRET,
    );
    expect(res.status).toBe(202);
    const result = json(await callbacks.waitFor((r) => isResult(r, `/${tag}`), WAIT_MS));
    expect(result).toMatchObject({ success: true, server_id: serverId });
    // The watch has seen it running once a sweep after the result has run.
    await moreSweeps(2);
    return { orderId: result.order_id as number, taskId: String(res.json?.task_id), result };
  };
  /** The ceiling the relay computes from max_price with the server's own rates (the reader's view of uniqueServer). */
  const ceilingOf = (maxPrice: number): number => {
    // uniqueServer: on-demand 20 coin per period for $0.9 per hour → $0.045 per hour per coin unit.
    const ceiling = bidCeiling(
      { price: { on_demand: { c: 20 }, spot: { c: 8 }, usd_per_hour: { on_demand: { c: 0.9 }, spot: 0.45 } } },
      'c',
      maxPrice,
    );
    return ceiling as number;
  };

  /** One attribute of a task's raw item in the runtime's table (what any role that may read task items sees). */
  const rawTaskAttribute = async (taskId: string, name: string): Promise<unknown> =>
    (await runtimeTableItem(runtime, `TASK#${taskId}`))?.[name];

  beforeAll(async () => {
    callbacks = await startReceiver();
    runtime = await startTestRuntime({ dialect, env: { WATCH_INTERVAL_SECONDS: '1' } });
  });
  afterAll(async () => {
    await runtime?.close();
    await callbacks?.close();
  });
  beforeEach(() => {
    sim().setSpotRaiseStep(RAISE_STEP);
  });

  it('rebid: an outbid spot order runs again at a higher bid below the ceiling, raised in steps the marketplace accepts', async () => {
    // Prepare
    const maxPrice = 0.6;
    const { orderId, taskId } = await runningOrder('rebid', 9911, 'OUTBID R1', {
      max_price: maxPrice,
      on_outbid: 'rebid',
    });
    const placed = sim()
      .orders()
      .find((o) => o.order_id === orderId)?.price as number;
    const competitor = Number((placed * 1.15).toFixed(6));
    // Act: another renter bids more
    sim().outbid(orderId, competitor);
    // Assess: running again, at a bid above the competitor's and within the ceiling
    await until(
      () =>
        sim()
          .orders()
          .find((o) => o.order_id === orderId)?.online === true,
      `order ${orderId} running again`,
    );
    const calls = sim()
      .spotPriceCalls()
      .filter((c) => c.order_id === orderId);
    const accepted = calls.filter((c) => c.outcome === 'ok');
    expect(calls.some((c) => c.outcome === 'raise-too-big')).toBe(true);
    expect(accepted.length).toBeGreaterThan(0);
    for (const call of accepted) {
      expect(call.desired_price).toBeGreaterThan(call.previous_price as number);
      expect(call.desired_price - (call.previous_price as number)).toBeLessThanOrEqual(
        (call.previous_price as number) * RAISE_STEP * (1 + 1e-9),
      );
      expect(call.desired_price).toBeLessThanOrEqual(ceilingOf(maxPrice));
    }
    expect(accepted.at(-1)?.desired_price).toBeGreaterThan(competitor);
    // Events: order.outbid once, one order.rebid per accepted raise with its prices, nothing failed
    await moreSweeps(2);
    expect(events('rebid', 'order.outbid')).toHaveLength(1);
    const rebids = events('rebid', 'order.rebid');
    expect(rebids.map((e) => [e.old_price, e.new_price])).toEqual(
      accepted.map((c) => [c.previous_price, c.desired_price]),
    );
    expect(events('rebid', 'order.recovery_failed')).toHaveLength(0);
    // The task view shows the current order and its history
    const view = await taskView(taskId);
    expect(view).toMatchObject({ state: 'succeeded', order_id: orderId });
    expect((view.history as Json[]).map((h) => h.event)).toEqual([
      'order.outbid',
      ...accepted.map(() => 'order.rebid'),
    ]);
  }, 120_000);

  it('rebid with a ceiling too low: the bid stops at the ceiling and order.recovery_failed is reported once', async () => {
    // Prepare: a ceiling just above the placed bid, a competitor far above it
    const maxPrice = 0.46;
    const { orderId } = await runningOrder('ceiling', 9912, 'OUTBID R2', { max_price: maxPrice, on_outbid: 'rebid' });
    const placed = sim()
      .orders()
      .find((o) => o.order_id === orderId)?.price as number;
    expect(placed).toBeLessThan(ceilingOf(maxPrice));
    // Act
    sim().outbid(orderId, ceilingOf(maxPrice) * 1.5);
    // Assess
    const failed = json(
      await callbacks.waitFor((r) => r.path === '/ceiling' && json(r).event === 'order.recovery_failed', WAIT_MS),
    );
    expect(failed).toMatchObject({ event: 'order.recovery_failed', order_id: orderId });
    expect(String(failed.reason)).toContain('ceiling');
    const accepted = sim()
      .spotPriceCalls()
      .filter((c) => c.order_id === orderId && c.outcome === 'ok');
    expect(accepted.at(-1)?.desired_price).toBe(ceilingOf(maxPrice));
    expect(Math.max(...accepted.map((c) => c.desired_price))).toBeLessThanOrEqual(ceilingOf(maxPrice));
    expect(
      sim()
        .orders()
        .find((o) => o.order_id === orderId)?.online,
    ).toBe(false);
    await moreSweeps(2);
    expect(events('ceiling', 'order.recovery_failed')).toHaveLength(1);
    expect(events('ceiling', 'order.outbid')).toHaveLength(1);
  }, 120_000);

  it('replace: a new order runs on another server, the lost one is cancelled and the lease moves to the new order', async () => {
    // Prepare: the order runs on its server; a second matching server appears afterwards
    const gpu = 'OUTBID R3';
    const { orderId, taskId, result } = await runningOrder('replace', 9913, gpu, {
      max_price: 0.6,
      on_outbid: 'replace',
      max_hours: 2,
      env: { REPLACE_TOKEN: 'kept' },
      // Access (issue 37): the replacement must let the same caller in the same way.
      ssh_public_key: REPLACE_KEY,
      ssh_password: 'ReplacePass2024x',
      jupyter_token: 'ReplaceJupyterToken2024',
      command: '#!/bin/sh\necho replace-setup',
    });
    // The env kept for a replacement is sealed in the task item (issue 29 §6): ciphertext, never the value.
    const kept = await rawTaskAttribute(taskId, 'replacement_env');
    expect(kept).toEqual(expect.stringMatching(/^v1\./));
    expect(JSON.stringify(kept)).not.toContain('kept');
    sim().addServer(uniqueServer(9914, gpu, sim().nativeCoin));
    const placed = sim()
      .orders()
      .find((o) => o.order_id === orderId)?.price as number;
    // Act: another renter bids more
    sim().outbid(orderId, placed * 2);
    // Assess: order.replaced names the new order, which runs on the other server; the lost one is cancelled
    const replaced = json(
      await callbacks.waitFor((r) => r.path === '/replace' && json(r).event === 'order.replaced', WAIT_MS),
    );
    expect(replaced).toMatchObject({ event: 'order.replaced', task_id: taskId, from_order_id: orderId });
    const newOrderId = replaced.to_order_id as number;
    expect(replaced.order_id).toBe(newOrderId);
    expect(String(replaced.ssh_connection)).toContain('ssh');
    const newOrder = sim()
      .orders()
      .find((o) => o.order_id === newOrderId);
    expect(newOrder).toMatchObject({ renting_server: 9914, online: true });
    // The same access as the lost order (issue 37): key, password, token and script, in the new create_order
    const accessOf = (id: number) => {
      const sent = sim().orderRequest(id) ?? {};
      return {
        ssh_key: sent.ssh_key,
        autossh_entrypoint: sent.autossh_entrypoint,
        ssh_password: sent.ssh_password,
        jupyter_token: sent.jupyter_token,
        command: sent.command,
      };
    };
    expect(accessOf(orderId)).toEqual({
      ssh_key: REPLACE_KEY,
      autossh_entrypoint: true,
      ssh_password: 'ReplacePass2024x',
      jupyter_token: 'ReplaceJupyterToken2024',
      command: '#!/bin/sh\necho replace-setup',
    });
    expect(accessOf(newOrderId)).toEqual(accessOf(orderId));
    await until(
      () =>
        sim()
          .orders()
          .find((o) => o.order_id === orderId)?.end_reason === 'cancelled',
      `lost order ${orderId} cancelled`,
    );
    // Each event once, and nothing failed
    await moreSweeps(2);
    expect(events('replace', 'order.outbid')).toHaveLength(1);
    expect(events('replace', 'order.replaced')).toHaveLength(1);
    expect(events('replace', 'order.recovery_failed')).toHaveLength(0);
    // The task view shows the new order and the history; the task's one result stays the first order's
    expect(callbacks.requests.filter((r) => isResult(r, '/replace'))).toHaveLength(1);
    const view = await taskView(taskId);
    expect(view).toMatchObject({ state: 'succeeded', order_id: newOrderId });
    expect((view.history as Json[]).map((h) => h.event)).toEqual(['order.outbid', 'order.replaced']);
    // The lease moved: extending the new order counts from the lost order's end
    const extend = await signedPost(
      runtime.url,
      '/webhook/extend-order',
      { order_id: newOrderId, hours: 1, callback_url: `${callbacks.url}/replace-extend` },
      TEST_WEBHOOK_SECRET,
    );
    expect(extend.status).toBe(202);
    const extended = json(await callbacks.waitFor((r) => isResult(r, '/replace-extend'), WAIT_MS));
    expect(extended).toMatchObject({
      success: true,
      order_id: newOrderId,
      lease_expires_at: (result.lease_expires_at as number) + 3600,
    });
  }, 120_000);

  it('rebid_then_replace with a ceiling too low for the rebid: a replacement runs', async () => {
    // Prepare
    const gpu = 'OUTBID R4';
    const maxPrice = 0.46;
    const { orderId } = await runningOrder('rebid-replace', 9915, gpu, {
      max_price: maxPrice,
      on_outbid: 'rebid_then_replace',
    });
    sim().addServer(uniqueServer(9916, gpu, sim().nativeCoin));
    // Act: a competitor above the ceiling
    sim().outbid(orderId, ceilingOf(maxPrice) * 1.5);
    // Assess: the bid went up to the ceiling, then a new order runs on the other server
    const replaced = json(
      await callbacks.waitFor((r) => r.path === '/rebid-replace' && json(r).event === 'order.replaced', WAIT_MS),
    );
    expect(replaced).toMatchObject({ from_order_id: orderId });
    expect(
      sim()
        .orders()
        .find((o) => o.order_id === replaced.to_order_id),
    ).toMatchObject({ renting_server: 9916, online: true });
    const accepted = sim()
      .spotPriceCalls()
      .filter((c) => c.order_id === orderId && c.outcome === 'ok');
    expect(accepted.at(-1)?.desired_price).toBe(ceilingOf(maxPrice));
    await until(
      () =>
        sim()
          .orders()
          .find((o) => o.order_id === orderId)?.end_reason === 'cancelled',
      `lost order ${orderId} cancelled`,
    );
    await moreSweeps(2);
    expect(events('rebid-replace', 'order.outbid')).toHaveLength(1);
    expect(events('rebid-replace', 'order.rebid').length).toBe(accepted.length);
    expect(events('rebid-replace', 'order.replaced')).toHaveLength(1);
    expect(events('rebid-replace', 'order.recovery_failed')).toHaveLength(0);
  }, 120_000);

  it('replace without another server: order.recovery_failed once, and the lost order is left as it was', async () => {
    // Prepare: the only server of its GPU type
    const { orderId } = await runningOrder('no-replacement', 9917, 'OUTBID R5', {
      max_price: 0.6,
      on_outbid: 'replace',
    });
    const ordersBefore = sim().orders().length;
    // Act
    sim().outbid(
      orderId,
      (sim()
        .orders()
        .find((o) => o.order_id === orderId)?.price as number) * 2,
    );
    // Assess
    const failed = json(
      await callbacks.waitFor(
        (r) => r.path === '/no-replacement' && json(r).event === 'order.recovery_failed',
        WAIT_MS,
      ),
    );
    expect(failed).toMatchObject({ event: 'order.recovery_failed', order_id: orderId });
    expect(String(failed.reason)).toContain('no replacement was placed: No OUTBID R5 available');
    await moreSweeps(2);
    expect(events('no-replacement', 'order.recovery_failed')).toHaveLength(1);
    expect(events('no-replacement', 'order.replaced')).toHaveLength(0);
    expect(sim().orders()).toHaveLength(ordersBefore);
    expect(
      sim()
        .orders()
        .find((o) => o.order_id === orderId),
    ).toMatchObject({ expired: false, online: false });
  }, 120_000);

  it.each([
    [
      { gpu_type: 'RTX 4090', max_price: 0.5, use_spot: false, on_outbid: 'rebid' },
      'on_outbid rebid needs a spot order (use_spot must not be false)',
    ],
    [
      { gpu_type: 'RTX 4090', on_outbid: 'rebid' },
      'on_outbid rebid needs max_price (the ceiling of the bid, USD per hour)',
    ],
    [
      { gpu_type: 'RTX 4090', max_price: 0.5, use_spot: false, on_outbid: 'replace' },
      'on_outbid replace needs a spot order (use_spot must not be false)',
    ],
    [
      { gpu_type: 'RTX 4090', on_outbid: 'retry' },
      'on_outbid must be one of notify, rebid, replace, rebid_then_replace',
    ],
  ])('refuses %j with a 400', async (body, error) => {
    const res = await signedPost(runtime.url, '/webhook/create-order', body, TEST_WEBHOOK_SECRET);
    expect(res.status).toBe(400);
    expect(res.json).toEqual({ error });
  });
});
