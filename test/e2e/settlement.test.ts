/**
 * Issue 38 §9, the ledger charges what was used, end to end against the local runtime in both
 * marketplace dialects (jest projects `e2e` and `e2e-live`): an order a cancel-order ended is settled
 * to the moment the relay cancelled it, not to the fleet watch's next sweep. The watch sweeps every
 * SWEEP_SECONDS here and the cancel is sent right after a sweep ended, so the sweep that sees the
 * order gone comes several seconds after the cancel: time the ledger must not charge. In the live
 * dialect the cost is the marketplace's `spend`; the hours held are the relay's own in both.
 *
 * The hours held are read from the ledger line and each end is checked against the window in which
 * the relay saw it: the readiness between the create and its result, the cancel between the
 * cancel-order request and its result. Not against the simulator's start and end: on a loaded machine
 * each end is off the simulator's by seconds (the relay's cancel moment, then taken before its
 * cancel_order call, came 1.7 s before the simulator ended the order; it is now taken when the call
 * answered), more than any fixed slack that still tells a cancel from a sweep.
 */
import { runtimeTableItem, startTestRuntime, TEST_WEBHOOK_SECRET, testDialect } from '../helpers/local-runtime';
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
    runtime = await startTestRuntime({
      dialect,
      env: {
        WATCH_INTERVAL_SECONDS: String(SWEEP_SECONDS),
        // The ledger is polled every 100 ms until the settlement: at the default 60 requests per minute
        // a sweep a few seconds late (a loaded machine) filled the window, and every poll after was
        // refused until the 45 s wait ran out (both dialects at once, load ~13). 45 s of polls stay under 600.
        MAX_REQUESTS_PER_MINUTE: '600',
      },
    });
    const res = await post('/admin/keys', { name: 'ledger', scopes: ['order', 'cancel', 'read'] });
    expect(res.status).toBe(201);
    secret = String(res.json?.secret);
  });
  afterAll(async () => {
    await runtime?.close();
    await callbacks?.close();
  });

  /** The order's ledger line as the relay wrote it: the hours held, from its readiness to its end (Unix seconds). */
  const ledgerLine = async (orderId: number): Promise<{ started: number; ended: number }> => {
    const item = await runtimeTableItem(runtime, `LEDGER#${orderId}`);
    return { started: Date.parse(String(item?.started_at)) / 1000, ended: Date.parse(String(item?.ended_at)) / 1000 };
  };

  it('settles a cancelled order to the cancel, not to the next sweep: the hours and USD of the time the relay held it', async () => {
    // Prepare: an on-demand order, ready
    const placed = await run('/webhook/create-order', { gpu_type: 'RTX 4090', use_spot: false, max_hours: 2 });
    const readyBy = Date.now() / 1000;
    expect(placed).toMatchObject({ success: true, order_id: expect.any(Number) });
    const orderId = placed.order_id as number;

    // Act: cancel right after a sweep ended, so the next one comes seconds later
    const sweeps = runtime.watch.sweeps();
    await waitUntil(() => runtime.watch.completed() > sweeps, 'a sweep to start and end', WAIT_MS);
    const cancelSent = Date.now() / 1000;
    expect(await run('/webhook/cancel-order', { order_id: orderId })).toMatchObject({ success: true });
    const cancelAnswered = Date.now() / 1000;

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
    const simSeconds = sim.ended_at! - sim.started_at!;
    const gpus = runtime.simulator!.control.servers().find((s) => s.id === sim.renting_server)!.gpu_array.length;
    const usdPerSecond = (sim.spend_usd - (dialect === 'live' ? 0.1 : 0)) / simSeconds;
    const held = await ledgerLine(orderId);
    const heldSeconds = held.ended - held.started;
    console.log(
      `[issue 38 §9] ${dialect}: ledger ${((settled!.gpu_hours * 3600) / gpus).toFixed(3)} s ` +
        `(${held.started} to ${held.ended}, cancel sent ${cancelSent}, answered ${cancelAnswered}), $${settled!.settled_usd}; ` +
        `marketplace ${simSeconds.toFixed(3)} s (${sim.started_at} to ${sim.ended_at}), $${sim.spend_usd.toFixed(6)}`,
    );
    // The end is the cancel: inside the cancel-order's round trip (a settlement at the sweep that saw
    // the order gone is seconds after it on a quiet machine, SWEEP_SECONDS apart).
    const ms = 0.001; // the ledger keeps milliseconds
    expect(held.ended).toBeGreaterThanOrEqual(cancelSent - ms);
    expect(held.ended).toBeLessThanOrEqual(cancelAnswered + ms);
    // The start is the readiness the relay saw, in whole seconds: not before the order was created,
    // not after its result arrived.
    expect(held.started).toBeGreaterThanOrEqual(Math.floor(sim.price_steps[0]!.from));
    expect(held.started).toBeLessThanOrEqual(readyBy);
    // The ledger's hours are that time held (per GPU), and its USD what that time cost: the
    // marketplace's own `spend` in the live dialect, the price over the time held in the spec's.
    expect(Math.abs((settled!.gpu_hours / gpus) * 3600 - heldSeconds)).toBeLessThanOrEqual(0.01);
    const costOfTimeHeld = dialect === 'live' ? sim.spend_usd : usdPerSecond * heldSeconds;
    expect(Math.abs(settled!.settled_usd - costOfTimeHeld)).toBeLessThanOrEqual(usdPerSecond * 0.01 + 1e-6);
  });
});
