/**
 * Crash points (issue 39 §3), two of the named ones: `npm start` is killed (SIGKILL of the whole
 * process group) at a point of an order's life and started again on the same state. For each:
 * exactly one result per task, no second order, and the ledger counts a settled order once.
 * - after create_order was sent and before its answer (the simulator creates the order and holds
 *   the answer: `timeoutAfterSend`);
 * - during a cancel job (the simulator holds cancel_order's answer: `slow`).
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
import { relayEnvFor, startRelayProcess, type RelayProcess } from '../helpers/relay-process';
import { waitUntil } from '../helpers/until';

type Json = Record<string, unknown>;
const WAIT_MS = 100_000;
const dialect = testDialect();

describe(`crash points: npm start killed and started again (${dialect} dialect)`, () => {
  let sim: MarketplaceSimulator;
  let callbacks: Receiver;
  let relay: RelayProcess | undefined;
  const stateDir = mkdtempSync(path.join(tmpdir(), 'relay-crash-'));
  let env: Record<string, string>;

  beforeAll(async () => {
    sim = await startSimulator({ ...FAST_SIMULATOR, ...(dialect === 'live' ? FAST_LIVE_SIMULATOR : {}), dialect });
    callbacks = await startReceiver();
    env = { ...relayEnvFor(sim), WATCH_INTERVAL_SECONDS: '1', ORDER_READY_TIMEOUT_SECONDS: '90' };
    relay = await startRelayProcess({ stateDir, env });
  }, 120_000);
  afterAll(async () => {
    await relay?.stop('SIGKILL');
    await callbacks?.close();
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
});
