/**
 * Spending budgets and the spend ledger end to end (issue 24 items 2 and 3) against the local runtime
 * (dynalite, fauxqs, local Step Functions, the simulator over HTTP), in both marketplace dialects
 * (jest projects `e2e` and `e2e-live`): under a budget a create-order without max_hours is refused
 * (400, nothing queued) while the default key without a budget is not; two concurrent create-orders
 * that together exceed a key's budget place exactly one order; a cancel settles the reservation and
 * releases the rest; the ledger's totals equal the simulator's record of what was rented and for how
 * long, within one sweep interval. Waits are on conditions with deadlines, never fixed sleeps.
 */
import { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { DynamoDBDocumentClient, ScanCommand } from '@aws-sdk/lib-dynamodb';
import { startTestRuntime, TEST_WEBHOOK_SECRET, testDialect } from '../helpers/local-runtime';
import type { LocalRuntime } from '../helpers/local-runtime';
import { request, signedPost, startReceiver, v2Headers } from '../helpers/receivers';
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
    const res = await post(path, { ...body, callback_url: `${callbacks.url}${tag}` }, key);
    expect(res.status).toBe(202);
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
      env: { CALLER_KEY_CACHE_SECONDS: '1', WATCH_INTERVAL_SECONDS: String(SWEEP_SECONDS) },
    });
    doc = DynamoDBDocumentClient.from(
      new DynamoDBClient({
        endpoint: runtime.dynamo.endpoint,
        region: 'us-east-1',
        credentials: { accessKeyId: 'local', secretAccessKey: 'local' },
      }),
    );
    // Every RTX 4090 costs the same: the worst case of an order is then one figure, whichever server it gets.
    const control = runtime.simulator!.control;
    const gpus = control
      .servers()
      .filter((s) => s.gpu_array.some((g) => g.includes('RTX 4090')) && !s.rented && s.online);
    for (const server of gpus.slice(1))
      control.setServer(server.id, { price: gpus[0]!.price, gpu_array: gpus[0]!.gpu_array });
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

  it("cancel settles the reservation and releases the rest; the ledger equals the simulator's record within one sweep", async () => {
    // Prepare: probe (no budget) places an order; its worst case is reserved
    const placed = await run('/webhook/create-order', order, 'probe');
    expect(placed).toMatchObject({ success: true, order_id: expect.any(Number) });
    const orderId = placed.order_id as number;
    const reserved = await keyTotal('probe');
    expect(reserved).toMatchObject({ reserved_usd: expect.any(Number), settled_usd: 0, orders: 0 });
    expect(reserved!.reserved_usd).toBeGreaterThan(0);
    worstCase = reserved!.reserved_usd;

    // Act: cancel it
    expect(await run('/webhook/cancel-order', { order_id: orderId }, 'probe')).toMatchObject({
      success: true,
      order_id: orderId,
    });

    // Assess: within a sweep the reservation is settled (nothing held) and one order is in the ledger
    const settled = await until(async () => {
      const line = await keyTotal('probe');
      return line && line.orders === 1 && line.reserved_usd === 0 ? line : undefined;
    }, 'the cancelled order settled');
    const sim = runtime.simulator!.control.orders().find((o) => o.order_id === orderId)!;
    expect(sim.ended_at).toBeDefined();
    const simHours = (sim.ended_at! - sim.started_at!) / 3600;
    const usdPerHour = reserved!.reserved_usd / HOURS;
    const gpus = runtime.simulator!.control.servers().find((s) => s.id === sim.renting_server)!.gpu_array.length;
    // One sweep interval plus one second of rounding (readiness is kept in whole seconds).
    const slackHours = (SWEEP_SECONDS + 1) / 3600;
    expect(Math.abs(settled.gpu_hours - gpus * simHours)).toBeLessThanOrEqual(gpus * slackHours + 1e-6);
    expect(Math.abs(settled.settled_usd - usdPerHour * simHours)).toBeLessThanOrEqual(usdPerHour * slackHours + 1e-6);
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
});
