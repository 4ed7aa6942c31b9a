/**
 * Crash points (issue 39 §3), the seven named ones: `npm start` is killed (SIGKILL of the whole
 * process group) at a point of an order's life and started again on the same state. For each:
 * exactly one result per task, no second order, and the ledger counts a settled order once.
 * - after create_order was sent and before its answer (the simulator creates the order and holds
 *   the answer: `timeoutAfterSend`);
 * - after create_order's answer and before the relay records it (a proxy in front of the simulator
 *   kills the relay right after writing the answer);
 * - after the order is running and before the lease starts (killed right after the first my_orders
 *   answer that shows it running: the readiness probe and the lease are still to come);
 * - during a cancel job (the simulator holds cancel_order's answer: `slow`);
 * - during the result callback (the receiver holds its answer): the task run again delivers the same
 *   result under the same webhook-id, which a Standard Webhooks receiver drops as a duplicate;
 * - during a key revoke (killed with the request unanswered): the revoke, sent again, lands once and
 *   no other key changes;
 * - during a sweep that resumes a standing order (killed once the server it waited for appeared and
 *   the sweep took the task out of the queue): one order on that server, one result, and the other
 *   standing order keeps waiting in its place.
 * The relay runs as a child process against a simulator this test runs (the marketplace outlives it);
 * the file runs in both dialects (jest projects e2e and e2e-live).
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import * as path from 'node:path';
import { hmacHex } from '../../lambdas/domain/signing';
import { startSimulator, type MarketplaceSimulator } from '../../local/simulator/marketplace-simulator';
import { FAST_LIVE_SIMULATOR, FAST_SIMULATOR, TEST_WEBHOOK_SECRET, testDialect } from '../helpers/local-runtime';
import { request, signedPost, startReceiver, v2Headers, type Receiver } from '../helpers/receivers';
import { uniqueServer } from '../helpers/sim-servers';
import { startKillProxy, type KillProxy } from '../helpers/kill-proxy';
import { relayEnvFor, startRelayProcess, type RelayProcess } from '../helpers/relay-process';
import { waitUntil } from '../helpers/until';

type Json = Record<string, unknown>;
const WAIT_MS = 100_000;
const dialect = testDialect();

describe(`crash points: npm start killed and started again (${dialect} dialect)`, () => {
  let sim: MarketplaceSimulator;
  let callbacks: Receiver;
  let relay: RelayProcess | undefined;
  let proxy: KillProxy;
  const stateDir = mkdtempSync(path.join(tmpdir(), 'relay-crash-'));
  let env: Record<string, string>;

  beforeAll(async () => {
    sim = await startSimulator({ ...FAST_SIMULATOR, ...(dialect === 'live' ? FAST_LIVE_SIMULATOR : {}), dialect });
    callbacks = await startReceiver();
    proxy = await startKillProxy(sim.url);
    env = {
      ...relayEnvFor(sim),
      MARKETPLACE_URL: proxy.url,
      WATCH_INTERVAL_SECONDS: '1',
      ORDER_READY_TIMEOUT_SECONDS: '90',
    };
    relay = await startRelayProcess({ stateDir, env });
  }, 120_000);
  afterAll(async () => {
    await relay?.stop('SIGKILL');
    await callbacks?.close();
    await proxy?.close();
    await sim?.close();
    rmSync(stateDir, { recursive: true, force: true });
  });

  const url = () => (relay as RelayProcess).url;
  const resultsFor = (tag: string) =>
    callbacks.requests.filter((r) => r.path === `/${tag}` && !(r.json as Json | undefined)?.event);
  const accept = async (route: string, tag: string, body: Json): Promise<string> => {
    const res = await signedPost(
      url(),
      route,
      { callback_url: `${callbacks.url}/${tag}`, ...body },
      TEST_WEBHOOK_SECRET,
    );
    expect(res.status).toBe(202);
    return String(res.json?.task_id);
  };
  const task = async (taskId: string): Promise<Json> => {
    const p = `/webhook/tasks/${taskId}`;
    return (await request(`${url()}${p}`, { headers: { 'x-webhook-signature': hmacHex(TEST_WEBHOOK_SECRET, p) } }))
      .json as Json;
  };
  const ledgerOrders = async (): Promise<number> => {
    const res = await request(`${url()}/webhook/spend`, {
      headers: v2Headers(TEST_WEBHOOK_SECRET, 'GET', '/webhook/spend'),
    });
    return Number((res.json as { total?: { orders?: number } }).total?.orders ?? 0);
  };
  const crashAndRestart = async (): Promise<void> => {
    await relay!.stop('SIGKILL');
    relay = await startRelayProcess({ stateDir, env });
  };

  it('after create_order was sent and before its answer: the order is adopted, one result, no second order', async () => {
    // Prepare: create_order is processed (the order exists) and its answer never comes
    sim.control.inject({ endpoint: 'create_order', kind: 'timeoutAfterSend', delayMs: 60_000 });
    const created = sim.control.counters().ordersCreated;
    const taskId = await accept('/webhook/create-order', 'lost-answer', {
      gpu_type: 'RTX 4090',
      use_spot: false,
      max_hours: 1,
    });
    await waitUntil(() => sim.control.counters().ordersCreated === created + 1, 'the order created', WAIT_MS);

    // Act
    await crashAndRestart();
    sim.control.clearFaults();

    // Assert
    await waitUntil(() => resultsFor('lost-answer').length >= 1, 'the result', WAIT_MS);
    const order = sim.control.orders().at(-1)!;
    expect(resultsFor('lost-answer').map((r) => r.json)).toEqual([
      expect.objectContaining({ success: true, order_id: order.order_id }),
    ]);
    expect(sim.control.counters().ordersCreated).toBe(created + 1);
    expect(await task(taskId)).toMatchObject({ state: 'succeeded' });
    expect(relay!.output()).toMatch(/carried on: 1 workflow\(s\)/);
  }, 240_000);

  it('during a cancel job: the job is delivered again, the order cancelled, one result, one ledger line', async () => {
    // Prepare: a running order, then a cancel whose marketplace answer is held
    const orderId = Number((resultsFor('lost-answer')[0]!.json as Json).order_id);
    const ledgerBefore = await ledgerOrders();
    sim.control.inject({ endpoint: 'cancel_order', kind: 'slow', delayMs: 15_000 });
    const taskId = await accept('/webhook/cancel-order', 'cancel', { order_id: orderId });
    await waitUntil(() => (sim.control.counters().calls.cancel_order ?? 0) >= 1, 'cancel_order sent', WAIT_MS);

    // Act
    await crashAndRestart();

    // Assert
    await waitUntil(() => resultsFor('cancel').length >= 1, 'the cancel result', WAIT_MS);
    await waitUntil(async () => (await ledgerOrders()) === ledgerBefore + 1, 'the order settled', WAIT_MS);
    expect(resultsFor('cancel').map((r) => r.json)).toEqual([expect.objectContaining({ success: true })]);
    expect(sim.control.orders().find((o) => o.order_id === orderId)).toMatchObject({ completed: true });
    expect(await task(taskId)).toMatchObject({ state: 'succeeded' });
    expect(relay!.output()).toMatch(/carried on: \d+ workflow\(s\), 1 job\(s\)/);
    // Still one result and one ledger line a few sweeps later
    await new Promise((resolve) => setTimeout(resolve, 3_000));
    expect(resultsFor('cancel')).toHaveLength(1);
    expect(await ledgerOrders()).toBe(ledgerBefore + 1);
  }, 240_000);

  it('during the result callback: one result (the same webhook-id on every delivery), no second order', async () => {
    // Prepare: the receiver holds its answer; a create-order reaches its result callback
    callbacks.setBehaviour({ delayMs: 30_000 });
    const created = sim.control.counters().ordersCreated;
    const taskId = await accept('/webhook/create-order', 'held', {
      gpu_type: 'RTX 4090',
      use_spot: false,
      max_hours: 1,
    });
    await waitUntil(() => resultsFor('held').length >= 1, 'the result callback in flight', WAIT_MS);

    // Act
    await crashAndRestart();
    callbacks.setBehaviour({});

    // Assert
    await waitUntil(async () => (await task(taskId)).state === 'succeeded', 'the task succeeded', WAIT_MS);
    const deliveries = resultsFor('held');
    const ids = new Set(deliveries.map((r) => String(r.headers['webhook-id'])));
    const orders = new Set(deliveries.map((r) => (r.json as Json).order_id));
    expect(ids.size).toBe(1);
    expect(orders.size).toBe(1);
    expect(deliveries.every((r) => (r.json as Json).success === true)).toBe(true);
    expect(sim.control.counters().ordersCreated).toBe(created + 1);
  }, 240_000);

  it('during a key revoke: the key is revoked once sent again, and no other key is lost', async () => {
    // Prepare: two keys
    for (const name of ['keep', 'gone']) {
      const res = await signedPost(url(), '/admin/keys', { name, scopes: ['read'] }, TEST_WEBHOOK_SECRET);
      expect(res.status).toBe(201);
    }
    const keys = async () =>
      (
        (await request(`${url()}/admin/keys`, { headers: v2Headers(TEST_WEBHOOK_SECRET, 'GET', '/admin/keys') }))
          .json as { keys: { name: string; status: string }[] }
      ).keys.map((k) => [k.name, k.status]);

    // Act: the revoke is sent and the relay killed before its answer is read
    const unanswered = signedPost(url(), '/admin/keys/gone/revoke', '', TEST_WEBHOOK_SECRET).catch(() => undefined);
    await crashAndRestart();
    await unanswered;
    const again = await signedPost(url(), '/admin/keys/gone/revoke', '', TEST_WEBHOOK_SECRET);

    // Assert
    expect(again).toMatchObject({ status: 200, json: { name: 'gone', status: 'revoked' } });
    expect(await keys()).toEqual(
      expect.arrayContaining([
        ['keep', 'active'],
        ['gone', 'revoked'],
      ]),
    );
  }, 240_000);

  it('during a sweep that resumes a standing order: one order, one result, the other keeps its place', async () => {
    // Prepare: two standing orders for GPUs nobody lists
    const resumed = await accept('/webhook/create-order', 'standing', {
      gpu_type: 'OMEGA R1',
      max_price: 0.5,
      wait_seconds: 3_600,
    });
    const other = await accept('/webhook/create-order', 'other', {
      gpu_type: 'OMEGA R2',
      max_price: 0.5,
      wait_seconds: 3_600,
    });
    await waitUntil(
      async () => (await task(resumed)).state === 'waiting' && (await task(other)).state === 'waiting',
      'both waiting',
      WAIT_MS,
    );
    const created = sim.control.counters().ordersCreated;

    // Act: the server appears; the relay dies once a sweep took the task out of the queue
    sim.control.addServer(uniqueServer(9901, 'OMEGA R1', sim.control.nativeCoin));
    await waitUntil(
      async () => (await task(resumed)).state !== 'waiting' || sim.control.counters().ordersCreated > created,
      'the sweep resuming the standing order',
      WAIT_MS,
    );
    await crashAndRestart();

    // Assert
    await waitUntil(() => resultsFor('standing').length >= 1, 'the standing order result', WAIT_MS);
    expect(resultsFor('standing').map((r) => r.json)).toEqual([
      expect.objectContaining({ success: true, server_id: 9901 }),
    ]);
    expect(sim.control.orders().filter((o) => o.renting_server === 9901)).toHaveLength(1);
    expect(await task(other)).toMatchObject({ state: 'waiting', position: 1 });
    await new Promise((resolve) => setTimeout(resolve, 3_000));
    expect(resultsFor('standing')).toHaveLength(1);
    expect(resultsFor('other')).toHaveLength(0);
  }, 240_000);

  it("after create_order's answer and before the relay records it: the order is adopted, one result", async () => {
    // Prepare
    const created = sim.control.counters().ordersCreated;
    const kills = proxy.kills();
    proxy.killAfter(
      (p) => p.includes('create_order'),
      () => relay!.killNow(),
    );
    const taskId = await accept('/webhook/create-order', 'answered', {
      gpu_type: 'RTX 4090',
      use_spot: false,
      max_hours: 1,
    });

    // Act: killed as the answer was written to it
    await waitUntil(() => proxy.kills() === kills + 1, 'the kill after the answer', WAIT_MS);
    await crashAndRestart();

    // Assert
    await waitUntil(() => resultsFor('answered').length >= 1, 'the result', WAIT_MS);
    const order = sim.control.orders().at(-1)!;
    expect(sim.control.counters().ordersCreated).toBe(created + 1);
    expect(resultsFor('answered').map((r) => r.json)).toEqual([
      expect.objectContaining({ success: true, order_id: order.order_id }),
    ]);
    expect(await task(taskId)).toMatchObject({ state: 'succeeded' });
  }, 240_000);

  it('after the order is running and before the lease starts: one result, the order has its lease', async () => {
    // Prepare
    const before = sim.control.orders().length;
    const created = sim.control.counters().ordersCreated;
    const kills = proxy.kills();
    proxy.killAfter(
      (p) =>
        p.includes('my_orders') &&
        sim.control
          .orders()
          .slice(before)
          .some((o) => o.online),
      () => relay!.killNow(),
    );
    await accept('/webhook/create-order', 'running', { gpu_type: 'RTX 4090', use_spot: false, max_hours: 1 });

    // Act
    await waitUntil(() => proxy.kills() === kills + 1, 'the kill after the order showed running', WAIT_MS);
    await crashAndRestart();

    // Assert: one result, with its lease, and no second order
    await waitUntil(() => resultsFor('running').length >= 1, 'the result', WAIT_MS);
    const order = sim.control.orders().at(-1)!;
    expect(sim.control.counters().ordersCreated).toBe(created + 1);
    expect(resultsFor('running').map((r) => r.json)).toEqual([
      expect.objectContaining({ success: true, order_id: order.order_id, lease_expires_at: expect.any(Number) }),
    ]);
    await new Promise((resolve) => setTimeout(resolve, 2_000));
    expect(resultsFor('running')).toHaveLength(1);
  }, 240_000);
});
