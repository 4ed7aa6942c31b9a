/**
 * Standing orders (issue 23) under a full hourly order cap, end to end in both dialects (jest projects
 * `e2e` and `e2e-live`). A file of its own because the cap is the runtime's MAX_ORDERS_PER_HOUR (here
 * 1) and a test file has one runtime (the handlers parse the environment once per module registry):
 * standing-orders.test.ts places several orders under the default cap.
 * - two standing orders, two matching servers, room for one order: the older task is placed, the
 *   younger one keeps waiting in its place (the cap refused it: it is held, not failed) for several
 *   sweeps, which do not read the listing for it;
 * - a standing order the cap holds fails when its wait ends, once, with the cap's text.
 * Waits are on conditions with deadlines (callbacks, sweep counts, task views), never fixed sleeps.
 */
import { startTestRuntime, TEST_WEBHOOK_SECRET, testDialect, type LocalRuntime } from '../helpers/local-runtime';
import { signedPost, startReceiver, type Receiver } from '../helpers/receivers';
import { uniqueServer } from '../helpers/sim-servers';
import { e2eCalls, isResult, json } from '../helpers/e2e-calls';

const dialect = testDialect();
const WAIT_MS = 60_000;

describe(`Standing orders under a full hourly order cap (${dialect} marketplace dialect)`, () => {
  let runtime: LocalRuntime;
  let callbacks: Receiver;
  const { sim, taskView, create, waitingView, moreSweeps } = e2eCalls(
    () => runtime,
    () => callbacks,
    WAIT_MS,
  );

  beforeAll(async () => {
    callbacks = await startReceiver();
    runtime = await startTestRuntime({
      dialect,
      // Task views are polled every 100 ms (waitingView): at the default 60 requests per minute a few
      // slow seconds fill the window and the next view is a 429.
      env: { WATCH_INTERVAL_SECONDS: '1', MAX_ORDERS_PER_HOUR: '1', MAX_REQUESTS_PER_MINUTE: '600' },
    });
  });
  afterAll(async () => {
    await runtime?.close();
    await callbacks?.close();
  });

  it('keeps a standing order the cap refuses waiting, in its place, instead of failing it', async () => {
    // Prepare: two standing orders wait for OMEGA C1, the older one first
    const older = await create('cap-older', { gpu_type: 'OMEGA C1', wait_seconds: 600 });
    await waitingView(older);
    const younger = await create('cap-younger', { gpu_type: 'OMEGA C1', wait_seconds: 600 });
    expect(await waitingView(younger)).toMatchObject({ position: 2 });

    // Act: two matching servers appear at once; the cap allows one order
    sim().addServer(uniqueServer(9811, 'OMEGA C1', sim().nativeCoin));
    sim().addServer(uniqueServer(9812, 'OMEGA C1', sim().nativeCoin));

    // Assess: the older task is placed; the younger one still waits, first in the queue, with no result
    expect(json(await callbacks.waitFor((r) => isResult(r, '/cap-older'), WAIT_MS))).toMatchObject({ success: true });
    await moreSweeps(1);
    const reads = () => sim().counters().processed.marketplace ?? 0;
    const before = reads();
    await moreSweeps(3);
    expect(await taskView(younger)).toMatchObject({ state: 'waiting', position: 1 });
    // Held, it is not tried again while the cap is full: no listing read, no resumed execution each
    // sweep (at most one read at the window's edge; a resume per sweep would read 3 times and more)
    expect(reads() - before).toBeLessThanOrEqual(1);
    expect(callbacks.requests.filter((r) => isResult(r, '/cap-younger'))).toEqual([]);
    expect(
      sim()
        .orders()
        .filter((o) => o.renting_server === 9811 || o.renting_server === 9812),
    ).toHaveLength(1);
    // Clean up
    await signedPost(runtime.url, '/webhook/cancel-task', { task_id: younger }, TEST_WEBHOOK_SECRET);
  }, 120_000);

  it("fails a standing order held by the cap with the cap's text when its wait ends, once", async () => {
    // Prepare: the cap is full (the test above placed one order); a server matches at once
    sim().addServer(uniqueServer(9813, 'OMEGA C2', sim().nativeCoin));
    // Act: a wait long enough to be seen waiting first (accepted to held takes a second or two on a
    // loaded machine), short enough not to be waited out for long
    const taskId = await create('cap-timeout', { gpu_type: 'OMEGA C2', wait_seconds: 8 });
    // Assess: it waits (the cap refused it), then ends without an order, the one result saying what stopped it
    await waitingView(taskId);
    const result = json(await callbacks.waitFor((r) => isResult(r, '/cap-timeout'), WAIT_MS));
    expect(result).toEqual({ success: false, error: 'Hourly order limit reached (1 per hour)' });
    expect(await taskView(taskId)).toMatchObject({ state: 'failed', result });
    await moreSweeps(2);
    expect(callbacks.requests.filter((r) => isResult(r, '/cap-timeout'))).toHaveLength(1);
    expect(
      sim()
        .orders()
        .filter((o) => o.renting_server === 9813),
    ).toEqual([]);
  }, 120_000);
});
