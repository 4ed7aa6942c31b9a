/**
 * Standing orders (issue 23) end to end, in both dialects (jest projects `e2e` and `e2e-live`: see
 * jest.config.js), through the simulator's control API, with the fleet watch sweeping every second:
 * - a standing order finds nothing, waits (GET shows `waiting`, `waiting_until`, its position), and is
 *   placed when a matching server appears later. The 90 s becomes "after the task has been
 *   seen waiting and two more sweeps have run": what is tested is that a server appearing at any
 *   time before the wait ends is found by the next sweep, which does not depend on how long the gap is;
 * - a standing order whose wait ends fails with the spec's no-match text, once;
 * - two waiting tasks and one new server: the older task gets it (the younger one the next server);
 * - cancel-task ends a waiting task with its one result; a second cancel finds it not waiting;
 * - issue 38 §2: standing orders whose host filters no listed host meets are never served a server nor
 *   resumed, and do not hold back a later caller; once such hosts are listed, a new one is refused at once.
 * Under a full hourly order cap: standing-orders-cap.test.ts (a runtime of its own, MAX_ORDERS_PER_HOUR=1).
 * Waits are on conditions with deadlines (callbacks, sweep counts, task views), never fixed sleeps.
 */
import { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { DynamoDBDocumentClient, GetCommand } from '@aws-sdk/lib-dynamodb';
import { startTestRuntime, TEST_WEBHOOK_SECRET, testDialect, type LocalRuntime } from '../helpers/local-runtime';
import { signedPost, startReceiver, type Receiver } from '../helpers/receivers';
import { uniqueServer } from '../helpers/sim-servers';
import { e2eCalls, isResult, json } from '../helpers/e2e-calls';

const dialect = testDialect();
const WAIT_MS = 60_000;

describe(`Standing orders (${dialect} marketplace dialect)`, () => {
  let runtime: LocalRuntime;
  let callbacks: Receiver;
  const { sim, taskView, create, waitingView, moreSweeps } = e2eCalls(
    () => runtime,
    () => callbacks,
    WAIT_MS,
  );

  /** The round of a task's queue entry: each resumed execution that waits again makes it one more. */
  const waitingRound = async (taskId: string): Promise<number | undefined> => {
    const out = await doc.send(new GetCommand({ TableName: runtime.dynamo.tableName, Key: { pk: `WAIT#${taskId}` } }));
    return (out.Item?.entry as { round?: number } | undefined)?.round;
  };
  let doc: DynamoDBDocumentClient;

  beforeAll(async () => {
    callbacks = await startReceiver();
    runtime = await startTestRuntime({
      dialect,
      // The phantom test polls several task views: more than the default per-address budget in a minute.
      env: { WATCH_INTERVAL_SECONDS: '1', MAX_REQUESTS_PER_MINUTE: '600' },
    });
    doc = DynamoDBDocumentClient.from(
      new DynamoDBClient({
        endpoint: runtime.dynamo.endpoint,
        region: 'us-east-1',
        credentials: { accessKeyId: 'local', secretAccessKey: 'local' },
      }),
    );
  });
  afterAll(async () => {
    doc?.destroy();
    await runtime?.close();
    await callbacks?.close();
  });

  it('waits while no server matches, then places the order on a server that appears later', async () => {
    // Prepare / Act: nothing matches OMEGA W1 yet
    const before = Math.floor(Date.now() / 1000);
    const taskId = await create('later', { gpu_type: 'OMEGA W1', max_price: 0.5, wait_seconds: 600 });
    const view = await waitingView(taskId);
    // Assess: waiting, with its end and its place in the queue
    expect(view).toMatchObject({ task_id: taskId, state: 'waiting', position: 1 });
    expect(view.waiting_until as number).toBeGreaterThanOrEqual(before + 600);
    expect(view.waiting_until as number).toBeLessThanOrEqual(Math.ceil(Date.now() / 1000) + 600);
    await moreSweeps(2);
    expect((await taskView(taskId)).state).toBe('waiting');
    expect(sim().counters().ordersCreated).toBe(0);

    // Act: the server appears
    sim().addServer(uniqueServer(9801, 'OMEGA W1', sim().nativeCoin));
    // Assess: one order, on it, and the one result
    const result = json(await callbacks.waitFor((r) => isResult(r, '/later'), WAIT_MS));
    expect(result).toMatchObject({ success: true, server_id: 9801 });
    expect(await taskView(taskId)).toMatchObject({ state: 'succeeded', result });
    expect((await taskView(taskId)).waiting_until).toBeUndefined();
    await moreSweeps(2);
    expect(callbacks.requests.filter((r) => isResult(r, '/later'))).toHaveLength(1);
    expect(
      sim()
        .orders()
        .filter((o) => o.renting_server === 9801),
    ).toHaveLength(1);
  }, 120_000);

  it("fails with the spec's no-match text when the wait ends without a server, once", async () => {
    // Act
    const taskId = await create('timeout', { gpu_type: 'OMEGA W2', max_price: 0.5, wait_seconds: 2 });
    // Assess
    const result = json(await callbacks.waitFor((r) => isResult(r, '/timeout'), WAIT_MS));
    expect(result).toEqual({ success: false, error: 'No OMEGA W2 available under $0.5/hr' });
    expect(await taskView(taskId)).toMatchObject({ state: 'failed', result });
    await moreSweeps(2);
    expect(callbacks.requests.filter((r) => isResult(r, '/timeout'))).toHaveLength(1);
  }, 120_000);

  it('serves two waiting tasks first come, first served: the older one gets the first new server', async () => {
    // Prepare: two standing orders for the same GPU type, the older one first
    const older = await create('older', { gpu_type: 'OMEGA W3', wait_seconds: 600 });
    await waitingView(older);
    const younger = await create('younger', { gpu_type: 'OMEGA W3', wait_seconds: 600 });
    expect(await waitingView(younger)).toMatchObject({ position: 2 });
    expect(await taskView(older)).toMatchObject({ state: 'waiting', position: 1 });

    // Act: one server appears
    sim().addServer(uniqueServer(9803, 'OMEGA W3', sim().nativeCoin));
    // Assess: the older task gets it; the younger one is now first in the queue
    expect(json(await callbacks.waitFor((r) => isResult(r, '/older'), WAIT_MS))).toMatchObject({
      success: true,
      server_id: 9803,
    });
    await moreSweeps(2);
    expect(await taskView(younger)).toMatchObject({ state: 'waiting', position: 1 });

    // Act: a second server appears; Assess: the younger task gets that one
    sim().addServer(uniqueServer(9804, 'OMEGA W3', sim().nativeCoin));
    expect(json(await callbacks.waitFor((r) => isResult(r, '/younger'), WAIT_MS))).toMatchObject({
      success: true,
      server_id: 9804,
    });
  }, 120_000);

  it('cancel-task ends a waiting task with one result; the task is never placed', async () => {
    // Prepare
    const taskId = await create('cancelled', { gpu_type: 'OMEGA W5', wait_seconds: 600 });
    await waitingView(taskId);
    // Act
    const res = await signedPost(
      runtime.url,
      '/webhook/cancel-task',
      { task_id: taskId, callback_url: `${callbacks.url}/canceller` },
      TEST_WEBHOOK_SECRET,
    );
    // Assess
    expect(res.status).toBe(202);
    expect(json(await callbacks.waitFor((r) => isResult(r, '/canceller'), WAIT_MS))).toEqual({
      success: true,
      task_id: taskId,
      state: 'cancelled',
    });
    const result = json(await callbacks.waitFor((r) => isResult(r, '/cancelled'), WAIT_MS));
    expect(result).toEqual({ success: false, error: 'cancelled while waiting for a server' });
    expect(await taskView(taskId)).toMatchObject({ state: 'failed', result });
    // A server appearing later is not rented for it
    sim().addServer(uniqueServer(9805, 'OMEGA W5', sim().nativeCoin));
    await moreSweeps(2);
    expect(
      sim()
        .orders()
        .filter((o) => o.renting_server === 9805),
    ).toEqual([]);
    expect(callbacks.requests.filter((r) => isResult(r, '/cancelled'))).toHaveLength(1);
    // Cancelling again: not waiting
    await signedPost(
      runtime.url,
      '/webhook/cancel-task',
      { task_id: taskId, callback_url: `${callbacks.url}/again` },
      TEST_WEBHOOK_SECRET,
    );
    expect(json(await callbacks.waitFor((r) => isResult(r, '/again'), WAIT_MS))).toEqual({
      success: false,
      error: `task ${taskId} is not waiting`,
    });
  }, 120_000);

  it('many waiting tasks cost at most one listing read per sweep, all together', async () => {
    // Prepare: several standing orders nothing matches, all waiting
    const ids: string[] = [];
    for (let i = 0; i < 6; i += 1) ids.push(await create(`many-${i}`, { gpu_type: 'OMEGA W6', wait_seconds: 600 }));
    for (const id of ids) await waitingView(id);
    await moreSweeps(1);
    const reads = () => sim().counters().processed.marketplace ?? 0;
    const before = reads();
    // Act: the watch sweeps a few times over them
    await moreSweeps(4);
    // Assess: sweeps started in the window plus one at its edge (a sweep started before it may read
    // inside it); one read per task per sweep would be 24 and more
    expect(reads() - before).toBeLessThanOrEqual(5);
    for (const id of ids) expect((await taskView(id)).state).toBe('waiting');
    // Clean up: the tasks end (so no later test sees them waiting)
    for (const id of ids) await signedPost(runtime.url, '/webhook/cancel-task', { task_id: id }, TEST_WEBHOOK_SECRET);
  }, 120_000);

  it('3 phantom standing orders (filters no host meets) do not starve a later caller, and are never resumed (issue 38 §2)', async () => {
    // Prepare: no OMEGA W7 is listed yet, so the filters cannot be judged and all four wait
    const phantoms: string[] = [];
    for (let i = 0; i < 3; i += 1)
      phantoms.push(
        await create(`phantom-${i}`, { gpu_type: 'OMEGA W7', wait_seconds: 600, min_rating_count: 1_000_000 }),
      );
    for (const id of phantoms) await waitingView(id);
    const later = await create('phantom-later', { gpu_type: 'OMEGA W7', wait_seconds: 600 });
    expect(await waitingView(later)).toMatchObject({ position: 4 });
    const ordersBefore = sim().orders().length;
    // Act: six servers appear, none with a million ratings
    for (let id = 9811; id <= 9816; id += 1) sim().addServer(uniqueServer(id, 'OMEGA W7', sim().nativeCoin));
    // Assess: the later caller gets one; the phantoms get no order and no execution (their queue round stays 1)
    expect(json(await callbacks.waitFor((r) => isResult(r, '/phantom-later'), WAIT_MS))).toMatchObject({
      success: true,
    });
    await moreSweeps(3);
    expect(sim().orders().length).toBe(ordersBefore + 1);
    for (const [i, id] of phantoms.entries()) {
      expect(await taskView(id)).toMatchObject({ state: 'waiting', position: i + 1 });
      expect(await waitingRound(id)).toBe(1);
    }
    // A new phantom, now that OMEGA W7 servers are listed, is refused at once with the filter named.
    await create('phantom-new', { gpu_type: 'OMEGA W7', wait_seconds: 600, min_rating_count: 1_000_000 });
    expect(json(await callbacks.waitFor((r) => isResult(r, '/phantom-new'), WAIT_MS))).toEqual({
      success: false,
      error: expect.stringMatching(
        /^No OMEGA W7 available with rating from at least 1000000 ratings \(\d+ servers? left out by rating\)/,
      ),
    });
    // Clean up
    for (const id of phantoms)
      await signedPost(runtime.url, '/webhook/cancel-task', { task_id: id }, TEST_WEBHOOK_SECRET);
  }, 120_000);

  it('cancel-task refuses a body without a task id with a 400 and queues nothing', async () => {
    const res = await signedPost(runtime.url, '/webhook/cancel-task', {}, TEST_WEBHOOK_SECRET);
    expect(res.status).toBe(400);
    expect(res.json).toEqual({ error: 'task_id required' });
  });
});
