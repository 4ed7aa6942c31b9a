import { DynamoDbSpendDays } from '../../../lambdas/adapters/dynamodb/dynamodb-spend-days';
import { DynamoDbSpendStore } from '../../../lambdas/adapters/dynamodb/dynamodb-spend-store';
import type { NewReservation } from '../../../lambdas/domain/teams/spend-budget';
import { startDynalite, type LocalDynamo } from '../../helpers/dynalite';

/** 2026-11-25T10:00:00Z */
const NOW = Date.UTC(2026, 10, 25, 10) / 1000;
const DAY = '2026-11-25';

const reservation = (taskId: string, extra: Partial<NewReservation> = {}): NewReservation => ({
  task_id: taskId,
  key: 'team',
  server_id: 7,
  gpu: 'RTX 4090',
  gpus: 2,
  usd_per_hour: 0.5,
  hours: 8,
  ...extra,
});

describe('Adapter: DynamoDbSpendStore (dynalite)', () => {
  let db: LocalDynamo;
  let store: DynamoDbSpendStore;
  let days: DynamoDbSpendDays;
  beforeAll(async () => {
    db = await startDynalite();
    store = new DynamoDbSpendStore(db.doc, db.tableName);
    days = new DynamoDbSpendDays(db.doc, db.tableName);
  });
  afterAll(async () => db.close());

  it('lets exactly the reservations that fit a budget through when they race, and a retried reservation counts once', async () => {
    // Each reserves $4 (0.5 × 8) against $10: two fit, the other four are refused.
    const outcomes = await Promise.all(
      Array.from({ length: 6 }, (_, i) => store.reserve(reservation(`race-${i}`, { key: 'race' }), { key: 10 }, NOW)),
    );
    expect(outcomes.filter((o) => o.ok)).toHaveLength(2);
    const refused = outcomes.find((o) => !o.ok);
    expect(refused).toMatchObject({ ok: false, refusal: { scope: 'key', key: 'race', used: 8, limit: 10, needed: 4 } });
    const winner = outcomes.findIndex((o) => o.ok);
    expect(await store.reserve(reservation(`race-${winner}`, { key: 'race' }), { key: 10 }, NOW)).toMatchObject({
      ok: true,
      usd: 4,
    });
    expect((await days.days([DAY])).get(DAY)?.keys.race).toEqual({
      reserved_usd: 8,
      settled_usd: 0,
      orders: 0,
      gpu_hours: 0,
    });
  });

  it('settles to price × time held, releases the rest, writes one ledger item, and settles once', async () => {
    await store.reserve(reservation('t-settle', { key: 'settle' }), { relay: 1_000 }, NOW);
    await store.started('t-settle', { order_id: 501, started_at: NOW + 60 });
    const settled = await store.settle('t-settle', { ended_at: NOW + 60 + 3 * 3600 }, NOW + 3 * 3600);
    expect(settled).toMatchObject({ key: 'settle', order_id: 501, cost_usd: 1.5, hours_held: 3, released_usd: 2.5 });
    expect(await store.settle('t-settle', { ended_at: NOW + 99_999 }, NOW + 99_999)).toMatchObject({ cost_usd: 1.5 });
    expect((await days.days([DAY])).get(DAY)?.keys.settle).toEqual({
      reserved_usd: 0,
      settled_usd: 1.5,
      orders: 1,
      gpu_hours: 6,
    });
    const { Item } = await db.doc.send(
      new (await import('@aws-sdk/lib-dynamodb')).GetCommand({ TableName: db.tableName, Key: { pk: 'LEDGER#501' } }),
    );
    expect(Item).toMatchObject({
      order_id: 501,
      key: 'settle',
      server_id: 7,
      gpu: 'RTX 4090',
      usd_per_hour: 0.5,
      hours: 3,
      cost_usd: 1.5,
      ttl: expect.any(Number),
    });
  });

  it("charges the marketplace's spend at the coin's USD rate kept with the reservation (never the price now), and releases everything for a task that placed nothing", async () => {
    // 0.02 USD per coin when placed; the marketplace reports 30 coins spent (after a raise) and a $0.10 creation fee.
    await store.reserve(reservation('t-billed', { key: 'billed', usd_per_coin: 0.02 }), {}, NOW);
    await store.started('t-billed', { order_id: 502, started_at: NOW });
    expect(
      await store.settle(
        't-billed',
        { ended_at: NOW + 7200, billed_hours: 1, spend: 30, creation_fee: 0.1 },
        NOW + 7200,
      ),
    ).toMatchObject({ cost_usd: 0.7, hours_held: 2 });
    await store.reserve(reservation('t-none', { key: 'none' }), {}, NOW);
    expect(await store.settle('t-none', { ended_at: NOW + 10 }, NOW + 10)).toMatchObject({
      cost_usd: 0,
      released_usd: 4,
    });
    expect((await days.days([DAY])).get(DAY)?.keys.none).toEqual({
      reserved_usd: 0,
      settled_usd: 0,
      orders: 0,
      gpu_hours: 0,
    });
  });

  it('reserves an extension first (refused over the budget), charges it to its own day and settles the cost in reservation order', async () => {
    await store.reserve(reservation('t-ext', { key: 'ext', key_budget_usd_per_day: 6 }), { key: 6 }, NOW);
    expect(await store.extend('t-ext', { id: 'x1', hours: 8 }, undefined, NOW + 60)).toMatchObject({
      ok: false,
      refusal: { scope: 'key', used: 4, limit: 6 },
    });
    const nextDay = NOW + 86_400;
    expect(await store.extend('t-ext', { id: 'x2', hours: 8 }, undefined, nextDay)).toMatchObject({
      ok: true,
      usd: 4,
      day: '2026-11-26',
      tracked: true,
    });
    expect(await store.extend('t-ext', { id: 'x2', hours: 8 }, undefined, nextDay)).toMatchObject({
      ok: true,
      usd: 4,
      tracked: true,
    });
    await store.started('t-ext', { order_id: 503, started_at: NOW });
    // 10 h held = $5: $4 on the first day (its whole reservation), $1 on the second.
    await store.settle('t-ext', { ended_at: NOW + 36_000 }, NOW + 36_000);
    const both = await days.days([DAY, '2026-11-26']);
    expect(both.get(DAY)?.keys.ext).toMatchObject({ reserved_usd: 0, settled_usd: 4, orders: 1 });
    expect(both.get('2026-11-26')?.keys.ext).toMatchObject({ reserved_usd: 0, settled_usd: 1, orders: 0 });
    expect(await store.extend('t-ext', { id: 'x3', hours: 1 }, undefined, nextDay)).toMatchObject({
      ok: true,
      tracked: false,
    });
  });

  it("a placement retry on another server replaces the task's reservation", async () => {
    await store.reserve(reservation('t-retry', { key: 'retry' }), {}, NOW);
    await store.reserve(reservation('t-retry', { key: 'retry', server_id: 8, usd_per_hour: 1 }), {}, NOW);
    expect((await days.days([DAY])).get(DAY)?.keys.retry).toMatchObject({ reserved_usd: 8 });
  });
});
