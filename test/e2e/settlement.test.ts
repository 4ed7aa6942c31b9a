/**
 * Issue 38 §9, the ledger charges what was used, end to end against the local runtime in both
 * marketplace dialects (jest projects `e2e` and `e2e-live`): an order a cancel-order ended is settled
 * to the moment the relay cancelled it, not to the fleet watch's next sweep. The watch sweeps every
 * SWEEP_SECONDS here and the cancel is sent right after a sweep ended, so the sweep that sees the
 * order gone comes several seconds after the cancel: time the ledger must not charge. In the live
 * dialect the cost is the marketplace's `spend`; the hours held are the relay's own in both.
 */
import { startTestRuntime, TEST_WEBHOOK_SECRET, testDialect } from '../helpers/local-runtime';
import type { LocalRuntime } from '../helpers/local-runtime';
import { request, signedPost, startReceiver, v2Headers } from '../helpers/receivers';
import type { ReceivedRequest, Receiver } from '../helpers/receivers';
import { waitUntil } from '../helpers/until';

const WAIT_MS = 45_000;
/** Long enough that a settlement at the sweep is seconds off; short enough for a test. */
const SWEEP_SECONDS = 6;
const dialect = testDialect();

type Json = Record<string, unknown>;
interface Line {
  key: string;
  reserved_usd: number;
  settled_usd: number;
  orders: number;
  gpu_hours: number;
}
const json = (r: ReceivedRequest): Json => (r.json ?? {}) as Json;

describe(`Settlement at the cancel (${dialect} marketplace dialect)`, () => {
  let runtime: LocalRuntime;
  let callbacks: Receiver;
  let secret = '';
  let seq = 0;

  const post = (path: string, body: Json, key?: string) =>
    signedPost(runtime.url, path, body, key ? secret : TEST_WEBHOOK_SECRET, key ? { 'x-webhook-key-id': key } : {});
  const run = async (path: string, body: Json): Promise<Json> => {
    seq += 1;
    const tag = `/r${seq}`;
    const res = await post(path, { ...body, callback_url: `${callbacks.url}${tag}` }, 'ledger');
    expect(res.status).toBe(202);
    return json(await callbacks.waitFor((r) => r.path === tag && json(r).event === undefined, WAIT_MS));
  };
  const line = async (): Promise<Line | undefined> => {
    const path = '/webhook/spend';
    const res = await request(`${runtime.url}${path}`, { headers: v2Headers(TEST_WEBHOOK_SECRET, 'GET', path) });
    return ((res.json ?? {}) as { keys?: Line[] }).keys?.find((l) => l.key === 'ledger');
  };

  beforeAll(async () => {
    callbacks = await startReceiver();
    runtime = await startTestRuntime({ dialect, env: { WATCH_INTERVAL_SECONDS: String(SWEEP_SECONDS) } });
    const res = await post('/admin/keys', { name: 'ledger', scopes: ['order', 'cancel', 'read'] });
    expect(res.status).toBe(201);
    secret = String(res.json?.secret);
  });
  afterAll(async () => {
    await runtime?.close();
    await callbacks?.close();
  });

  it('settles a cancelled order to the cancel, not to the next sweep: hours and USD equal the marketplace record within a second', async () => {
    // Prepare: an on-demand order, ready
    const placed = await run('/webhook/create-order', { gpu_type: 'RTX 4090', use_spot: false, max_hours: 2 });
    expect(placed).toMatchObject({ success: true, order_id: expect.any(Number) });
    const orderId = placed.order_id as number;

    // Act: cancel right after a sweep ended, so the next one comes seconds later
    const sweeps = runtime.watch.sweeps();
    await waitUntil(() => runtime.watch.completed() > sweeps, 'a sweep to start and end', WAIT_MS);
    expect(await run('/webhook/cancel-order', { order_id: orderId })).toMatchObject({ success: true });

    // Assess: once settled, the ledger holds the time the order ran, not the time to the sweep
    let settled: Line | undefined;
    await waitUntil(
      async () => {
        settled = await line();
        return settled !== undefined && settled.orders === 1 && settled.reserved_usd === 0;
      },
      'the cancelled order settled',
      WAIT_MS,
    );
    const sim = runtime.simulator!.control.orders().find((o) => o.order_id === orderId)!;
    const simHours = (sim.ended_at! - sim.started_at!) / 3600;
    const gpus = runtime.simulator!.control.servers().find((s) => s.id === sim.renting_server)!.gpu_array.length;
    const usdPerSecond = (sim.spend_usd - (dialect === 'live' ? 0.1 : 0)) / (simHours * 3600);
    // One second and a half: readiness is kept in whole seconds and seen at the next poll (1 s).
    const slackSeconds = 1.5;
    console.log(
      `[issue 38 §9] ${dialect}: ledger ${(settled!.gpu_hours * 3600) / gpus} s, $${settled!.settled_usd}; ` +
        `marketplace ${(simHours * 3600).toFixed(1)} s, $${sim.spend_usd.toFixed(6)}`,
    );
    expect(Math.abs(settled!.gpu_hours / gpus - simHours) * 3600).toBeLessThanOrEqual(slackSeconds);
    expect(Math.abs(settled!.settled_usd - sim.spend_usd)).toBeLessThanOrEqual(usdPerSecond * slackSeconds + 1e-6);
  });
});
