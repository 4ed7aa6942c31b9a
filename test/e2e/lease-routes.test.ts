/**
 * The lease and spot price routes end to end (issue 14) against the local runtime: set-spot-price
 * success, a marketplace refusal (a too-big decrease: live `exceeded_max_step`, spec code 6
 * `too_low_price`) and the relay's own 600 s refusal without a marketplace call; extend-order moves the
 * lease end and refuses an order that is not active; bad input on both routes (and an env value with
 * `&` on create-order) is a 400 with the exact text and queues nothing. Runs in both marketplace dialects (jest projects `e2e` and `e2e-live`).
 * Waits are on conditions with deadlines (the receiver's waitFor), never fixed sleeps.
 */
import { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { DynamoDBDocumentClient, ScanCommand } from '@aws-sdk/lib-dynamodb';
import { startTestRuntime, TEST_WEBHOOK_SECRET, testDialect } from '../helpers/local-runtime';
import type { LocalRuntime } from '../helpers/local-runtime';
import { signedPost, signedPostV2, startReceiver } from '../helpers/receivers';
import { USD_PER } from '../../local/simulator/catalogue';
import type { ReceivedRequest, Receiver } from '../helpers/receivers';

const WAIT_MS = 45_000;
const dialect = testDialect();

type Json = Record<string, unknown>;
const json = (r: ReceivedRequest): Json => (r.json ?? {}) as Json;
/** A task result (not a lifecycle event) delivered to `path`. */
const isResult = (r: ReceivedRequest, path: string): boolean => r.path === path && json(r).event === undefined;
const round = (n: number): number => Math.round(n * 1e6) / 1e6;

describe(`Lease and spot price routes (${dialect} marketplace dialect)`, () => {
  let runtime: LocalRuntime;
  let callbacks: Receiver;
  let doc: DynamoDBDocumentClient;
  let seq = 0;

  /** Posts a signed request and waits for its one task result at a fresh callback path. */
  const run = async (path: string, body: Json): Promise<Json> => {
    seq += 1;
    const tag = `/r${seq}`;
    const res = await signedPost(
      runtime.url,
      path,
      { ...body, callback_url: `${callbacks.url}${tag}` },
      TEST_WEBHOOK_SECRET,
    );
    expect(res.status).toBe(202);
    expect(res.json).toMatchObject({ status: 'queued', task_id: expect.any(String), message: expect.any(String) });
    return json(await callbacks.waitFor((r) => isResult(r, tag), WAIT_MS));
  };
  const createOrder = async (extra: Json = {}): Promise<Json> => {
    const result = await run('/webhook/create-order', { gpu_type: 'RTX 4090', ...extra });
    expect(result).toMatchObject({ success: true, order_id: expect.any(Number) });
    return result;
  };
  const simOrder = (orderId: number) => {
    const order = runtime.simulator?.control.orders().find((o) => o.order_id === orderId);
    if (!order) throw new Error(`simulator has no order ${orderId}`);
    return order as unknown as { price: number; renting_server: number };
  };
  const setSpotCalls = (): number => runtime.simulator?.control.counters().processed.set_spot_price ?? 0;
  const taskCount = async (): Promise<number> => {
    const out = await doc.send(
      new ScanCommand({
        TableName: runtime.dynamo.tableName,
        FilterExpression: 'begins_with(pk, :p)',
        ExpressionAttributeValues: { ':p': 'TASK#' },
      }),
    );
    return out.Count ?? 0;
  };

  beforeAll(async () => {
    callbacks = await startReceiver();
    runtime = await startTestRuntime({ dialect });
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

  it('sets a spot price, names a marketplace refusal, and refuses a second decrease within 600 s itself', async () => {
    // Prepare: a spot order; raise its price first (increases always pass) so a decrease can stay above the server minimum
    const orderId = (await createOrder()).order_id as number;
    const placedPrice = simOrder(orderId).price;
    const high = round(placedPrice * 2);

    // Act + Assess: success, in the marketplace unit (the native coin per day) and in USD per hour
    // (the simulator prices the native coin at $0.02, in both dialects)
    const set = await run('/webhook/set-spot-price', { order_id: orderId, desired_price: high });
    expect(set).toEqual({
      success: true,
      order_id: orderId,
      desired_price: high,
      currency: dialect === 'live' ? 'CLORE-Blockchain' : 'NATIVE-Blockchain',
      desired_price_usd_per_hour: expect.any(Number),
    });
    expect(set.desired_price_usd_per_hour as number).toBeCloseTo((high * USD_PER['NATIVE-Blockchain']) / 24, 3);
    expect(simOrder(orderId).price).toBe(high);

    // A raise to more than 10 × the current price (USD per hour typed for a coin per day?): refused by the relay itself
    const callsBeforeRaise = setSpotCalls();
    const raise = await run('/webhook/set-spot-price', { order_id: orderId, desired_price: round(high * 11) });
    expect(raise).toMatchObject({ success: false, error: expect.stringContaining('is more than 10 × its current') });
    expect(setSpotCalls()).toBe(callsBeforeRaise);

    // A decrease of 40 % (more than the marketplace's 20 % step, still above the minimum): refused by the marketplace
    const callsBeforeRefusal = setSpotCalls();
    const refused = await run('/webhook/set-spot-price', { order_id: orderId, desired_price: round(high * 0.6) });
    expect(refused).toMatchObject({ success: false });
    expect(String(refused.error)).toContain(dialect === 'live' ? 'exceeded_max_step' : 'too_low_price');
    expect(setSpotCalls()).toBe(callsBeforeRefusal + 1);
    expect(simOrder(orderId).price).toBe(high);

    // A refused decrease does not count: a 10 % decrease passes
    const lower = round(high * 0.9);
    expect(await run('/webhook/set-spot-price', { order_id: orderId, desired_price: lower })).toMatchObject({
      success: true,
      order_id: orderId,
      desired_price: lower,
    });

    // A second decrease within 600 s: the relay refuses it without calling the marketplace
    const callsBefore = setSpotCalls();
    const second = await run('/webhook/set-spot-price', { order_id: orderId, desired_price: round(lower * 0.95) });
    expect(second).toMatchObject({ success: false });
    expect(String(second.error)).toMatch(
      new RegExp(
        `^spot price of order ${orderId} was lowered \\d+ s ago; the marketplace allows one decrease per 600 s`,
      ),
    );
    expect(setSpotCalls()).toBe(callsBefore);
    expect(simOrder(orderId).price).toBe(lower);
  }, 120_000);

  it('extends a lease by hours from its current end, and refuses an order that is not active', async () => {
    // Prepare: a leased order
    const created = await createOrder({ max_hours: 1 });
    const orderId = created.order_id as number;
    const end = created.lease_expires_at as number;
    expect(typeof end).toBe('number');

    // Act + Assess: the end moves by exactly 2 h (the lease has not ended, so it counts from the end)
    expect(await run('/webhook/extend-order', { order_id: orderId, hours: 2 })).toEqual({
      success: true,
      order_id: orderId,
      lease_expires_at: end + 7_200,
    });
    expect(await run('/webhook/extend-order', { order_id: orderId, hours: 0.5 })).toEqual({
      success: true,
      order_id: orderId,
      lease_expires_at: end + 7_200 + 1_800,
    });

    // An order without a lease gets one, counted from now
    const unleased = await createOrder();
    expect(unleased.lease_expires_at).toBeUndefined();
    const before = Math.floor(Date.now() / 1000);
    const extended = await run('/webhook/extend-order', { order_id: unleased.order_id as number, hours: 1 });
    expect(extended).toMatchObject({ success: true, order_id: unleased.order_id });
    expect(extended.lease_expires_at as number).toBeGreaterThanOrEqual(before + 3_600);
    expect(extended.lease_expires_at as number).toBeLessThanOrEqual(Math.ceil(Date.now() / 1000) + 3_600);

    // An order the marketplace ended is not active
    runtime.simulator?.control.setOrder(orderId, { expired: true });
    expect(await run('/webhook/extend-order', { order_id: orderId, hours: 1 })).toEqual({
      success: false,
      error: `order ${orderId} is not active`,
    });
  }, 120_000);

  it.each([
    ['/webhook/extend-order', {}, 'order_id and hours required'],
    ['/webhook/extend-order', { order_id: 5 }, 'order_id and hours required'],
    ['/webhook/extend-order', { hours: 2 }, 'order_id and hours required'],
    ['/webhook/extend-order', { order_id: 5, hours: 0 }, 'hours must be a number between 0 and 720'],
    ['/webhook/extend-order', { order_id: 5, hours: 721 }, 'hours must be a number between 0 and 720'],
    ['/webhook/extend-order', { order_id: 5, hours: '2' }, 'hours must be a number between 0 and 720'],
    ['/webhook/set-spot-price', {}, 'order_id and desired_price required'],
    ['/webhook/set-spot-price', { order_id: 5 }, 'order_id and desired_price required'],
    ['/webhook/set-spot-price', { desired_price: 1 }, 'order_id and desired_price required'],
    ['/webhook/set-spot-price', { order_id: 5, desired_price: 0 }, 'desired_price must be a positive number'],
    ['/webhook/set-spot-price', { order_id: 5, desired_price: -1 }, 'desired_price must be a positive number'],
    [
      '/webhook/set-spot-price',
      { order_id: 5, desired_price: 1e12 },
      'desired_price must be between 0.00000001 and 10000000 (order currency per day)',
    ],
    [
      '/webhook/create-order',
      { gpu_type: 'RTX 4090', env: { URL: 'https://x.example/?a=1&b=2' } },
      'env values must not contain "&"',
    ],
    ['/webhook/create-order', { gpu_type: 'RTX 4090', max_hours: 0 }, 'max_hours must be a number between 0 and 720'],
    ['/webhook/create-order', { gpu_type: 'RTX 4090', max_hours: 721 }, 'max_hours must be a number between 0 and 720'],
  ])('answers 400 for %s %j with the exact text and queues nothing', async (path, body, text) => {
    // Prepare
    const tasksBefore = await taskCount();
    // Act: signed v2, which binds the route; a body-only v1 signature of `{}` sent to two routes is one
    // signature on two routes, and the second is 401 (issue 29).
    const res = await signedPostV2(runtime.url, path, body, TEST_WEBHOOK_SECRET);
    // Assess
    expect(res.status).toBe(400);
    expect(res.json).toEqual({ error: text });
    expect(await taskCount()).toBe(tasksBefore);
  });
});
