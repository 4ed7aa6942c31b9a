/**
 * Spending budgets and the spend ledger end to end (issue 24 items 2 and 3) against the local runtime
 * (dynalite, fauxqs, local Step Functions, the simulator over HTTP), in both marketplace dialects
 * (jest projects `e2e` and `e2e-live`): under a budget a create-order without max_hours is refused
 * (400, nothing queued) while the default key without a budget is not; two concurrent create-orders
 * that together exceed a key's budget place exactly one order; a cancel settles the reservation and
 * releases the rest; the ledger holds the time the relay held the order (the readiness it saw to its
 * cancel) at the order's price, production's own `spend` in the live dialect. Waits are on conditions
 * with deadlines, never fixed sleeps.
 *
 * Issue 29 §3 (money: nothing is spent that was not reserved first): a set-spot-price raise past the
 * key's budget is refused with the key's own figures and never reaches the marketplace; after a raise
 * the ledger equals what the marketplace charged in USD (production's `spend` with its fees in the
 * live dialect; price steps × time in the spec one); 10 concurrent raises and 10 concurrent creates
 * under one budget never take the key past it.
 */
import { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { DynamoDBDocumentClient, GetCommand, ScanCommand } from '@aws-sdk/lib-dynamodb';
import { startTestRuntime, TEST_WEBHOOK_SECRET, testDialect } from '../helpers/local-runtime';
import type { LocalRuntime } from '../helpers/local-runtime';
import { request, sendUntilNot503, signedPost, startReceiver, v2Headers } from '../helpers/receivers';
import type { ReceivedRequest, Receiver } from '../helpers/receivers';
import { waitUntil } from '../helpers/until';
import { runCli } from '../unit/cli/run-cli';

/** Polls `read` until it yields a value (waitUntil on its result). */
const until = async <T>(read: () => Promise<T | undefined>, what: string): Promise<T> => {
  let value: T | undefined;
  await waitUntil(async () => (value = await read()) !== undefined, what, WAIT_MS);
  return value as T;
};

const WAIT_MS = 45_000;
const SWEEP_SECONDS = 1;
const HOURS = 2;
const dialect = testDialect();
/** The marketplace's fee per order: production's $0.10 in the live dialect (and npm start's setting), none in the spec's. */
const CREATION_FEE_USD = dialect === 'live' ? 0.1 : 0;

type Json = Record<string, unknown>;
interface Line {
  key: string;
  day: string;
  reserved_usd: number;
  settled_usd: number;
  orders: number;
  gpu_hours: number;
}
const json = (r: ReceivedRequest): Json => (r.json ?? {}) as Json;
const isResult = (r: ReceivedRequest, path: string): boolean => r.path === path && json(r).event === undefined;

describe(`Spending budgets and the ledger (${dialect} marketplace dialect)`, () => {
  let runtime: LocalRuntime;
  let callbacks: Receiver;
  let doc: DynamoDBDocumentClient;
  let seq = 0;
  const secrets: Record<string, string> = {};

  const post = (path: string, body: Json, key?: string) =>
    signedPost(
      runtime.url,
      path,
      body,
      key ? secrets[key] : TEST_WEBHOOK_SECRET,
      key ? { 'x-webhook-key-id': key } : {},
    );
  const accept = async (path: string, body: Json, key?: string): Promise<string> => {
    seq += 1;
    const tag = `/r${seq}`;
    // A 503 queued nothing and says to retry later: sent again, as a caller would. The concurrent
    // test's 20 requests at once (all from 127.0.0.1: one rate-limit item) got one in 5 of 14 runs at
    // load 17-20, when the local AWS calls still timed out after 2 s.
    const res = await sendUntilNot503(() => post(path, { ...body, callback_url: `${callbacks.url}${tag}` }, key));
    // The answer's text beside a status other than 202, so a refusal says which part refused.
    expect(res.status === 202 ? 202 : `${res.status} ${res.text}`).toBe(202);
    return tag;
  };
  const resultOf = async (tag: string): Promise<Json> =>
    json(await callbacks.waitFor((r) => isResult(r, tag), WAIT_MS));
  const run = async (path: string, body: Json, key?: string): Promise<Json> => resultOf(await accept(path, body, key));
  const createKey = async (name: string, scopes: string[], extra: Json = {}): Promise<void> => {
    const res = await post('/admin/keys', { name, scopes, ...extra });
    expect(res.status).toBe(201);
    secrets[name] = String(res.json?.secret);
  };
  const spend = async (key?: string, query = ''): Promise<{ status: number; json: Json }> => {
    const path = `/webhook/spend${query}`;
    const res = await request(`${runtime.url}${path}`, {
      headers: {
        // Signature v2: a key id needs it (issue 29).
        ...v2Headers(key ? secrets[key]! : TEST_WEBHOOK_SECRET, 'GET', path),
        ...(key ? { 'x-webhook-key-id': key } : {}),
      },
    });
    return { status: res.status, json: (res.json ?? {}) as Json };
  };
  const keyTotal = async (key: string): Promise<Line | undefined> =>
    ((await spend()).json.keys as Line[] | undefined)?.find((line) => line.key === key);
  /** The order's ledger line as the relay wrote it: the hours held, from its readiness to its end (Unix seconds). */
  const ledgerLine = async (orderId: number): Promise<{ started: number; ended: number }> => {
    const { Item } = await doc.send(
      new GetCommand({ TableName: runtime.dynamo.tableName, Key: { pk: `LEDGER#${orderId}` } }),
    );
    return { started: Date.parse(String(Item?.started_at)) / 1000, ended: Date.parse(String(Item?.ended_at)) / 1000 };
  };
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
  const order = { gpu_type: 'RTX 4090', use_spot: false, max_hours: HOURS };
  /** The worst case of one order (every RTX 4090 costs the same here), from the probe's reservation. */
  let worstCase = 0;

  beforeAll(async () => {
    callbacks = await startReceiver();
    runtime = await startTestRuntime({
      dialect,
      env: {
        CALLER_KEY_CACHE_SECONDS: '1',
        WATCH_INTERVAL_SECONDS: String(SWEEP_SECONDS),
        // The concurrency test places and refuses many orders at once: the hourly cap and the
        // per-address request limit are not what it tests.
        MAX_ORDERS_PER_HOUR: '200',
        MAX_REQUESTS_PER_MINUTE: '600',
      },
    });
    doc = DynamoDBDocumentClient.from(
      new DynamoDBClient({
        endpoint: runtime.dynamo.endpoint,
        region: 'us-east-1',
        credentials: { accessKeyId: 'local', secretAccessKey: 'local' },
      }),
    );
    // Every RTX 4090 costs the same (one with a spot market, for the raises): the worst case of an
    // order is then one figure, whichever server it gets.
    const control = runtime.simulator!.control;
    const gpus = control
      .servers()
      .filter((s) => s.gpu_array.some((g) => g.includes('RTX 4090')) && !s.rented && s.online);
    const model = gpus.find((s) => Object.keys(s.price.spot).length > 0) ?? gpus[0]!;
    for (const server of gpus)
      control.setServer(server.id, {
        price: model.price,
        gpu_array: model.gpu_array,
        allowed_coins: model.allowed_coins,
        mrl: Math.max(model.mrl, 24),
      });
    await createKey('probe', ['order', 'cancel', 'read']);
  });
  afterAll(async () => {
    doc?.destroy();
    await runtime?.close();
    await callbacks?.close();
  });

  it("accepts a create-order without max_hours from the default key when no budget applies (the spec's callers are unchanged)", async () => {
    const before = await taskCount();
    const res = await post('/webhook/create-order', { gpu_type: 'no-such-gpu' });
    expect(res.status).toBe(202);
    expect(await taskCount()).toBe(before + 1);
  });

  it('refuses 400 `max_hours required under a budget` for a key with a budget, and queues nothing', async () => {
    await createKey('capped', ['order', 'read'], { budget_usd_per_day: 5 });
    const before = await taskCount();
    const res = await post('/webhook/create-order', { gpu_type: 'RTX 4090' }, 'capped');
    expect(res).toMatchObject({ status: 400, json: { error: 'max_hours required under a budget' } });
    expect(await taskCount()).toBe(before);
  });

  it('cancel settles the reservation and releases the rest; the ledger holds the time the relay held the order', async () => {
    // Prepare: probe (no budget) places an order; its worst case is reserved
    const placed = await run('/webhook/create-order', order, 'probe');
    const readyBy = Date.now() / 1000;
    expect(placed).toMatchObject({ success: true, order_id: expect.any(Number) });
    const orderId = placed.order_id as number;
    const reserved = await keyTotal('probe');
    expect(reserved).toMatchObject({ reserved_usd: expect.any(Number), settled_usd: 0, orders: 0 });
    expect(reserved!.reserved_usd).toBeGreaterThan(0);
    worstCase = reserved!.reserved_usd;

    // Act: cancel it
    const cancelSent = Date.now() / 1000;
    expect(await run('/webhook/cancel-order', { order_id: orderId }, 'probe')).toMatchObject({
      success: true,
      order_id: orderId,
    });
    const cancelAnswered = Date.now() / 1000;

    // Assess: within a sweep the reservation is settled (nothing held) and one order is in the ledger
    const settled = await until(async () => {
      const line = await keyTotal('probe');
      return line && line.orders === 1 && line.reserved_usd === 0 ? line : undefined;
    }, 'the cancelled order settled');
    const sim = runtime.simulator!.control.orders().find((o) => o.order_id === orderId)!;
    expect(sim.ended_at).toBeDefined();
    // The time held is the relay's own: from the readiness it saw (whole seconds) to its cancel. Each
    // end lies where the relay could see it, which on a loaded machine is seconds off the simulator's
    // (its cancel moment came 1.7 s before the simulator ended the order in one run), so the ends are
    // checked against those windows rather than the simulator's with a fixed slack.
    const held = await ledgerLine(orderId);
    const ms = 0.001; // the ledger keeps milliseconds
    expect(held.started).toBeGreaterThanOrEqual(Math.floor(sim.price_steps[0]!.from));
    expect(held.started).toBeLessThanOrEqual(readyBy);
    expect(held.ended).toBeGreaterThanOrEqual(cancelSent - ms);
    expect(held.ended).toBeLessThanOrEqual(cancelAnswered + ms);
    const heldHours = (held.ended - held.started) / 3600;
    // The worst case is the all-in price (renter fee included) × the lease, plus the creation fee once.
    const usdPerHour = (reserved!.reserved_usd - CREATION_FEE_USD) / HOURS;
    const gpus = runtime.simulator!.control.servers().find((s) => s.id === sim.renting_server)!.gpu_array.length;
    // Rounding only (the ledger's hours and USD to 6 decimals).
    const oneSecond = 1 / 3600;
    expect(Math.abs(settled.gpu_hours - gpus * heldHours)).toBeLessThanOrEqual(gpus * 0.01 * oneSecond + 1e-6);
    if (dialect === 'live') {
      // What the marketplace charged (production's `spend`, fees included), whatever the relay saw.
      expect(Math.abs(settled.settled_usd - sim.spend_usd)).toBeLessThanOrEqual(usdPerHour * oneSecond + 1e-6);
    } else {
      // The spec's marketplace states no spend: the all-in price over the time held.
      expect(Math.abs(settled.settled_usd - (usdPerHour * heldHours + CREATION_FEE_USD))).toBeLessThanOrEqual(
        usdPerHour * oneSecond + 1e-6,
      );
    }
    expect(settled.settled_usd).toBeLessThan(reserved!.reserved_usd);
  });

  it("places exactly one of two concurrent create-orders that together exceed the key's budget", async () => {
    // Prepare: a budget of 1.5 worst cases (the probe's reservation in the test above)
    expect(worstCase).toBeGreaterThan(0);
    await createKey('team', ['order', 'cancel', 'read'], {
      budget_usd_per_day: Math.round(worstCase * 1.5 * 100) / 100,
    });

    // Act: two create-orders at once
    const tags = await Promise.all([
      accept('/webhook/create-order', order, 'team'),
      accept('/webhook/create-order', order, 'team'),
    ]);
    const results = await Promise.all(tags.map(resultOf));

    // Assess: one order, one refusal naming the budget
    const ok = results.filter((r) => r.success === true);
    const refused = results.filter((r) => r.success === false);
    expect(ok).toHaveLength(1);
    expect(refused).toHaveLength(1);
    expect(String(refused[0]!.error)).toMatch(/^budget exceeded: \$\d+\.\d{2} of \$\d+\.\d{2} today \(key team\)/);
    const teamOrders = runtime.simulator!.control.orders().filter((o) => o.order_id === ok[0]!.order_id);
    expect(teamOrders).toHaveLength(1);
    // The key sees its own lines only; the refused one left nothing held
    const own = await spend('team');
    expect(own.status).toBe(200);
    expect((own.json.keys as Line[]).map((l) => l.key)).toEqual(['team']);
    expect((own.json.keys as Line[])[0]!.reserved_usd).toBeCloseTo(worstCase, 5);
    await run('/webhook/cancel-order', { order_id: ok[0]!.order_id }, 'team');
  });

  it('answers 400 on bad dates and on a range over 400 days', async () => {
    expect(await spend(undefined, '?from=2026-13-01')).toMatchObject({
      status: 400,
      json: { error: 'from must be a date YYYY-MM-DD' },
    });
    expect(await spend(undefined, '?from=2025-01-01&to=2026-06-01')).toMatchObject({
      status: 400,
      json: { error: 'at most 400 days per request' },
    });
    expect((await spend(undefined, '?from=2026-01-01&to=2026-01-02')).status).toBe(200);
  });

  it('gpu-relay spend prints the ledger as a table, one line per key and day plus totals', async () => {
    const printed = await runCli(['spend'], {
      env: { GPU_RELAY_URL: runtime.url, GPU_RELAY_SECRET: TEST_WEBHOOK_SECRET },
    });
    expect(printed).toMatchObject({ code: 0 });
    expect(printed.stdout).toMatch(/^DAY\s+KEY\s+RESERVED\s+SETTLED\s+ORDERS\s+GPU_HOURS$/m);
    expect(printed.stdout).toMatch(/^\d{4}-\d{2}-\d{2}\s+probe\s+\$\d+\.\d{2}\s+\$\d+\.\d{2}\s+1\s+/m);
    expect(printed.stdout).toMatch(/^total\s+\*\s+/m);
  });

  // ---- issue 29 §3: raises are reserved first ------------------------------------------------------

  const spotOrder = { gpu_type: 'RTX 4090', use_spot: true, max_hours: HOURS };
  const simOrder = (orderId: number) => runtime.simulator!.control.orders().find((o) => o.order_id === orderId)!;
  const spotCalls = (orderId: number) =>
    runtime.simulator!.control.spotPriceCalls().filter((c) => c.order_id === orderId);
  /** The day's used total of a key as the ledger reports it: what is held plus what is settled. */
  const usedBy = async (key: string): Promise<number> => {
    const line = await keyTotal(key);
    return line ? line.reserved_usd + line.settled_usd : 0;
  };

  it("refuses a raise past the key's budget with the key's own figures, and set_spot_price is never called", async () => {
    // Prepare: a spot order under a budget of 1.5 × its worst case
    await createKey('raiser', ['order', 'cancel', 'read'], { budget_usd_per_day: 100 });
    const placed = await run('/webhook/create-order', spotOrder, 'raiser');
    expect(placed).toMatchObject({ success: true, order_id: expect.any(Number) });
    const orderId = placed.order_id as number;
    const reserved = await usedBy('raiser');
    expect(reserved).toBeGreaterThan(0);
    const budget = Math.round(reserved * 1.5 * 100) / 100;
    await createKey('raiser2', ['order', 'cancel', 'read'], { budget_usd_per_day: budget });
    // The budget travels with the task: the order of a key with the small budget.
    await run('/webhook/cancel-order', { order_id: orderId }, 'raiser');
    const capped = await run('/webhook/create-order', spotOrder, 'raiser2');
    expect(capped).toMatchObject({ success: true, order_id: expect.any(Number) });
    const cappedId = capped.order_id as number;
    const price = simOrder(cappedId).price;
    const before = await usedBy('raiser2');

    // Act: a raise to 5× the price (the relay's own 10× rule allows it), three times as in the report
    const results = [];
    for (let i = 0; i < 3; i += 1)
      results.push(await run('/webhook/set-spot-price', { order_id: cappedId, desired_price: price * 5 }, 'raiser2'));

    // Assess: each refused with the key's own figures; the marketplace saw no set_spot_price; nothing more held
    for (const result of results) {
      expect(result.success).toBe(false);
      expect(String(result.error)).toMatch(
        new RegExp(
          `^budget exceeded: \\$${before.toFixed(2)} of \\$${budget.toFixed(2)} today \\(key raiser2\\); this order needs up to \\$\\d+\\.\\d{2}$`,
        ),
      );
    }
    expect(spotCalls(cappedId)).toEqual([]);
    expect(simOrder(cappedId).price).toBe(price);
    expect(await usedBy('raiser2')).toBeCloseTo(before, 6);
    await run('/webhook/cancel-order', { order_id: cappedId }, 'raiser2');
  }, 120_000);

  it('after a raise the ledger equals what the marketplace charged in USD (within 1 %), and the raise was reserved', async () => {
    // Prepare: a spot order of a key without a budget
    await createKey('payer', ['order', 'cancel', 'read']);
    const placed = await run('/webhook/create-order', spotOrder, 'payer');
    const readyBy = Date.now() / 1000;
    const orderId = placed.order_id as number;
    const reservedBefore = await usedBy('payer');
    const price = simOrder(orderId).price;

    // Act: run a moment, raise 1.5×, run a moment, cancel
    await waitUntil(
      async () => Date.now() / 1000 - (simOrder(orderId).started_at ?? Infinity) > 2,
      'running 2 s',
      WAIT_MS,
    );
    expect(
      await run('/webhook/set-spot-price', { order_id: orderId, desired_price: price * 1.5 }, 'payer'),
    ).toMatchObject({ success: true });
    const reservedAfterRaise = await usedBy('payer');
    const raisedAt = Date.now() / 1000;
    await waitUntil(async () => Date.now() / 1000 - raisedAt > 3, 'running 3 s at the new price', WAIT_MS);
    const cancelSent = Date.now() / 1000;
    await run('/webhook/cancel-order', { order_id: orderId }, 'payer');
    const cancelAnswered = Date.now() / 1000;

    // Assess: the raise reserved more; the settled cost equals the marketplace's charge in USD
    expect(reservedAfterRaise).toBeGreaterThan(reservedBefore);
    const settled = await until(async () => {
      const line = await keyTotal('payer');
      return line && line.orders === 1 && line.reserved_usd === 0 ? line : undefined;
    }, 'the raised order settled');
    const sim = simOrder(orderId);
    const charged = sim.spend_usd;
    const error = Math.abs(settled.settled_usd - charged) / charged;
    // The same without the creation fee (which both count once): the error of the hours' part alone.
    const hoursError =
      Math.abs(settled.settled_usd - CREATION_FEE_USD - (charged - CREATION_FEE_USD)) / (charged - CREATION_FEE_USD);
    console.log(
      `[issue 29 §3] ${dialect}: ledger $${settled.settled_usd} vs marketplace $${charged.toFixed(6)}: error ${(error * 100).toFixed(3)} % (hours' part alone ${(hoursError * 100).toFixed(3)} %)`,
    );
    if (dialect === 'live') {
      // Production's spend (fees included) at the coin's USD rate kept with the reservation.
      expect(error).toBeLessThanOrEqual(0.01);
      expect(hoursError).toBeLessThanOrEqual(0.01);
    } else {
      // The spec's marketplace states no spend: the ledger is the price steps × the time the relay saw
      // the order held (readiness to the end it saw, both up to a poll or a sweep off the simulator's).
      // Over that same time, the simulator's own price steps cost the ledger's figure within 1 %.
      const { Item } = await doc.send(
        new GetCommand({ TableName: runtime.dynamo.tableName, Key: { pk: `LEDGER#${orderId}` } }),
      );
      const from = Date.parse(String(Item?.started_at)) / 1000;
      const to = Date.parse(String(Item?.ended_at)) / 1000;
      const steps = sim.price_steps;
      const overSameTime = steps.reduce((usd, step, i) => {
        const a = Math.max(from, step.from);
        const b = Math.min(to, steps[i + 1]?.from ?? Infinity);
        return b > a ? usd + (step.usd_per_hour * (b - a)) / 3600 : usd;
      }, 0);
      const sameTimeError = Math.abs(settled.settled_usd - overSameTime) / overSameTime;
      console.log(
        `[issue 29 §3] spec: over the relay's held time the simulator charges $${overSameTime.toFixed(6)}: error ${(sameTimeError * 100).toFixed(3)} %`,
      );
      // The relay counts in whole seconds (readiness, the raise, the end): 1 % plus 1 s at the higher
      // price per boundary, which on a run of a few seconds is most of the difference.
      const perSecond = Math.max(...steps.map((step) => step.usd_per_hour)) / 3600;
      expect(Math.abs(settled.settled_usd - overSameTime)).toBeLessThanOrEqual(overSameTime * 0.01 + 3 * perSecond);
      // And that time is the relay's: from the readiness it saw (not before the order was created, not
      // after its result) to its cancel (inside the cancel-order's round trip). Not the simulator's whole
      // run within a fixed slack: on a loaded machine the relay's cancel moment came 1.7 s before the
      // simulator's end in one run.
      expect(from).toBeGreaterThanOrEqual(Math.floor(steps[0]!.from));
      expect(from).toBeLessThanOrEqual(readyBy);
      expect(to).toBeGreaterThanOrEqual(cancelSent - 0.001);
      expect(to).toBeLessThanOrEqual(cancelAnswered + 0.001);
    }
    // Never re-derived from the current (raised) price: more than the old price alone would give
    expect(settled.settled_usd).toBeGreaterThan(0);
  }, 120_000);

  // Longer than jest's 60 s: twenty tasks at once, then a cancel per placed order, took over 60 s at load ~20.
  it('10 concurrent raises and 10 concurrent creates under one budget never take the key past it', async () => {
    // Prepare: a key with room for about 2.5 worst cases, one spot order placed
    await createKey('probe2', ['order', 'cancel', 'read']);
    const probe = await run('/webhook/create-order', spotOrder, 'probe2');
    const spotWorstCase = await usedBy('probe2');
    await run('/webhook/cancel-order', { order_id: probe.order_id }, 'probe2');
    const budget = Math.round(spotWorstCase * 2.5 * 100) / 100;
    // Servers enough for every create: a refusal here is the budget's, never a lack of servers.
    const control = runtime.simulator!.control;
    const model = control.servers().find((s) => s.id === simOrder(probe.order_id as number).renting_server)!;
    for (let i = 0; i < 12; i += 1) control.addServer({ ...model, id: 990_000 + i, rented: false });
    await createKey('crowd', ['order', 'cancel', 'read'], { budget_usd_per_day: budget });
    const first = await run('/webhook/create-order', spotOrder, 'crowd');
    expect(first).toMatchObject({ success: true });
    const orderId = first.order_id as number;
    const price = simOrder(orderId).price;

    // Act: 10 raises (1.2× … 3.0×) and 10 creates at once
    const tags = await Promise.all([
      ...Array.from({ length: 10 }, (_, i) =>
        accept('/webhook/set-spot-price', { order_id: orderId, desired_price: price * (1.2 + i * 0.2) }, 'crowd'),
      ),
      ...Array.from({ length: 10 }, () => accept('/webhook/create-order', spotOrder, 'crowd')),
    ]);
    const results = await Promise.all(tags.map(resultOf));

    // Assess: never past the budget; every refusal names it; each refused raise never reached the marketplace
    const used = await usedBy('crowd');
    expect(used).toBeLessThanOrEqual(budget + 1e-6);
    const raises = results.slice(0, 10);
    const creates = results.slice(10);
    for (const refused of results.filter((r) => r.success === false))
      expect(String(refused.error)).toMatch(/^budget exceeded: .* \(key crowd\)/);
    expect(results.some((r) => r.success === false)).toBe(true);
    const accepted = spotCalls(orderId).filter((c) => c.outcome === 'ok');
    expect(accepted).toHaveLength(raises.filter((r) => r.success === true).length);
    const placedIds = creates.filter((r) => r.success === true).map((r) => r.order_id as number);
    expect(runtime.simulator!.control.orders().filter((o) => placedIds.includes(o.order_id))).toHaveLength(
      placedIds.length,
    );
    console.log(
      `[issue 29 §3] ${dialect}: budget $${budget}, used $${used}; raises ok ${accepted.length}/10, creates ok ${placedIds.length}/10`,
    );
    for (const id of [orderId, ...placedIds]) await run('/webhook/cancel-order', { order_id: id }, 'crowd');
  }, 180_000);
});
