/**
 * Issue 29 §3, "nothing is spent that was not reserved first", against the real spend store (dynalite):
 * a set-spot-price raise and an outbid recovery's rebid reserve (new USD/h − reserved USD/h) × lease
 * hours left before the marketplace call and are refused over a budget without one; a refused change
 * gives its reservation back; a replacement round reserves as a new order (ReserveQuota on its input);
 * settlement by price steps and by the marketplace's spend; budget texts show a key only its own figures.
 */
import { DynamoDbSpendDays } from '../../../lambdas/adapters/dynamodb/dynamodb-spend-days';
import { DynamoDbSpendStore } from '../../../lambdas/adapters/dynamodb/dynamodb-spend-store';
import { reserveQuota } from '../../../lambdas/domain/create-order/reserve-quota';
import type { WorkflowState } from '../../../lambdas/domain/create-order/workflow-state';
import { BudgetExceededError, MarketplaceRejectedError } from '../../../lambdas/domain/errors';
import type { TrackedOrder } from '../../../lambdas/domain/leases/lease';
import { setSpotPrice } from '../../../lambdas/domain/leases/lease-jobs';
import { recoverOutbid } from '../../../lambdas/domain/recovery/outbid-recovery';
import {
  allInPrice,
  allInUsdPerHour,
  budgetExceededText,
  raiseUsd,
  settledCostUsd,
  type NewReservation,
} from '../../../lambdas/domain/teams/spend-budget';
import { aServer, anOrder, aState, NATIVE } from '../../fakes/builders';
import { FakeEventSender } from '../../fakes/event-sender';
import { FakeLeaseStore } from '../../fakes/lease-store';
import { FakeMarketplace } from '../../fakes/marketplace';
import { FakeNotifier } from '../../fakes/notifier';
import { FakeSlidingWindow } from '../../fakes/sliding-window';
import { startDynalite, type LocalDynamo } from '../../helpers/dynalite';

/** 2026-11-25T10:00:00Z */
const NOW = Date.UTC(2026, 10, 25, 10) / 1000;
const DAY = '2026-11-25';
const SERVER = 7;
// aServer: 10 coin per period on demand for $1.2/h → $0.12 per hour per coin unit.

describe('money rules (pure)', () => {
  it('all-in USD per hour is price × (1 + fee); a listing can show it with the creation fee', () => {
    expect(allInUsdPerHour(0.5, { renter_fee_percent: 5 })).toBe(0.525);
    expect(allInPrice(2, { renter_fee_percent: 5, creation_fee_usd: 0.1 })).toEqual({
      usd_per_hour: 2.1,
      creation_fee_usd: 0.1,
    });
  });

  it('a raise reserves the difference over the hours left, fees included; a decrease nothing', () => {
    expect(raiseUsd(0.5, 5.05, 1)).toBe(4.55);
    expect(raiseUsd(0.5, 1, 2, { renter_fee_percent: 10, creation_fee_usd: 0.1 })).toBe(1.1);
    expect(raiseUsd(1, 0.5, 2)).toBe(0);
    expect(raiseUsd(0.5, 1, 0)).toBe(0);
  });

  it('settles price × hours per price step (a raise starts a new one), or the marketplace spend at the rate kept', () => {
    const reservation = {
      order_id: 1,
      usd_per_hour: 1,
      started_at: 0,
      renter_fee_percent: 5,
      creation_fee_usd: 0.1,
      segments: {
        s7: { id: 's7', day: DAY, usd: 2, hours: 2, at: -60 },
        rT: { id: 'rT', day: DAY, usd: 1, hours: 1, at: 3600, usd_per_hour: 2 },
      },
    };
    // 1 h at $1 + 0.5 h at $2, 5 % on top, $0.10 once
    expect(settledCostUsd(reservation, { ended_at: 5400 })).toBeCloseTo(2 * 1.05 + 0.1, 6);
    // Production's spend: 40 coin at $0.05 (the rate when placed), whatever the price is now
    expect(
      settledCostUsd({ ...reservation, usd_per_coin: 0.05 }, { ended_at: 5400, spend: 40, creation_fee: 0.1 }),
    ).toBe(2.1);
    expect(settledCostUsd({ ...reservation, order_id: undefined }, { ended_at: 5400 })).toBe(0);
  });

  it('tells a key only its own figures; relay-wide figures only to callers that see every order', () => {
    const refusal = {
      scope: 'relay' as const,
      key: 'ci',
      used: 48,
      limit: 50,
      needed: 3,
      key_used: 1.52,
      key_limit: 2,
    };
    expect(budgetExceededText(refusal)).toBe('budget exceeded: $48.00 of $50.00 today; this order needs up to $3.00');
    expect(budgetExceededText(refusal, { relayWide: false })).toBe(
      "budget exceeded: the relay's daily limit is reached (key ci: $1.52 of $2.00 today); this order needs up to $3.00",
    );
    expect(budgetExceededText({ ...refusal, scope: 'key', used: 1.52, limit: 2 }, { relayWide: false })).toBe(
      'budget exceeded: $1.52 of $2.00 today (key ci); this order needs up to $3.00',
    );
  });
});

describe('reservations before the marketplace call (dynalite)', () => {
  let db: LocalDynamo;
  let store: DynamoDbSpendStore;
  let days: DynamoDbSpendDays;
  beforeAll(async () => {
    db = await startDynalite();
    store = new DynamoDbSpendStore(db.doc, db.tableName);
    days = new DynamoDbSpendDays(db.doc, db.tableName);
  });
  afterAll(async () => db.close());

  const reserved = (taskId: string, key: string, patch: Partial<NewReservation> = {}): NewReservation => ({
    task_id: taskId,
    key,
    key_budget_usd_per_day: 2,
    server_id: SERVER,
    gpu: 'RTX 4090',
    gpus: 1,
    // The spot bid 5.5 × $0.12
    usd_per_hour: 0.66,
    hours: 1,
    ...patch,
  });
  const keyUsed = async (key: string) => {
    const line = (await days.days([DAY])).get(DAY)?.keys[key];
    return line ? line.reserved_usd + line.settled_usd : 0;
  };
  /** A running spot order 1 at 5.5 coin, placed by task `t-<key>` with a lease of one hour left. */
  const orderOf = async (key: string) => {
    const leases = new FakeLeaseStore();
    await leases.track(
      { order_id: 1, task_id: `t-${key}`, spot: true, key },
      { now: NOW, status: 'running', lease: { expires_at: NOW + 3600, hours: 1 } },
    );
    const marketplace = new FakeMarketplace({ interleave: false });
    marketplace.servers = [aServer(SERVER)];
    marketplace.orders = [anOrder(1, { renting_server: SERVER, type: 'spot', currency: NATIVE, price: 5.5 })];
    await store.reserve(reserved(`t-${key}`, key), { key: 2 }, NOW);
    await store.started(`t-${key}`, { order_id: 1, started_at: NOW });
    return { leases, marketplace };
  };

  it("refuses a set-spot-price raise past the key's budget with its own figures, and never calls the marketplace", async () => {
    const { leases, marketplace } = await orderOf('ci');
    const deps = { leases, marketplace, spend: { store } };
    // 10× → $6.60/h: (6.60 − 0.66) × 1 h left = $5.94 on top of $0.66, past $2
    const result = await setSpotPrice(
      { order_id: 1, desired_price: 55 },
      { now: NOW, task_id: 'raise-1', relayWide: false },
      deps,
    );
    expect(result).toEqual({
      success: false,
      error: 'budget exceeded: $0.66 of $2.00 today (key ci); this order needs up to $5.94',
    });
    expect(marketplace.spotPriceCalls).toEqual([]);
    expect(await keyUsed('ci')).toBeCloseTo(0.66, 6);
  });

  it('reserves a raise that fits (the difference over the hours left) before the call, and a refused one gives it back', async () => {
    const { leases, marketplace } = await orderOf('ok');
    const reports: number[] = [];
    const deps = { leases, marketplace, spend: { store, onReserved: (usd: number) => reports.push(usd) } };
    // 2× with half the hour left: (1.32 − 0.66) × 0.5 = $0.33
    const ok = await setSpotPrice({ order_id: 1, desired_price: 11 }, { now: NOW + 1800, task_id: 'raise-2' }, deps);
    expect(ok).toMatchObject({ success: true });
    expect(marketplace.spotPriceCalls).toEqual([{ order_id: 1, price: 11 }]);
    expect(await keyUsed('ok')).toBeCloseTo(0.99, 6);
    expect(reports).toEqual([0.33]);
    // The marketplace refuses the next: nothing stays reserved for it
    marketplace.spotPriceFailure = new MarketplaceRejectedError('exceeded_max_step', { max_step: 1 });
    const refused = await setSpotPrice(
      { order_id: 1, desired_price: 16.5 },
      { now: NOW + 1800, task_id: 'raise-3' },
      deps,
    );
    expect(refused).toMatchObject({ success: false });
    expect(await keyUsed('ok')).toBeCloseTo(0.99, 6);
    expect(Object.keys((await store.reservation('t-ok'))!.segments).sort()).toEqual(['rraise-2', 's7']);
  });

  it("outbid recovery's rebid reserves each raise: over the budget order.recovery_failed with the budget text, never a raise", async () => {
    await store.reserve(reserved('t-rebid', 'rebid', { key_budget_usd_per_day: 0.7 }), { key: 0.7 }, NOW);
    const marketplace = new FakeMarketplace({ interleave: false });
    marketplace.servers = [aServer(SERVER)];
    marketplace.orders = [
      anOrder(1, { renting_server: SERVER, type: 'spot', status: 'paused', currency: NATIVE, price: 5.5 }),
    ];
    const order: TrackedOrder = {
      order_id: 1,
      task_id: 't-rebid',
      callback_url: 'https://cb.example/x',
      spot: true,
      on_outbid: 'rebid',
      max_price: 2,
      key: 'rebid',
      expires_at: NOW + 3600,
      hours: 1,
    } as TrackedOrder;
    const events = new FakeEventSender();
    const outcome = await recoverOutbid(
      { leases: new FakeLeaseStore(), marketplace, notifier: new FakeNotifier(), events, spend: { store } },
      order,
      marketplace.orders[0]!,
      { now: NOW, since: NOW - 5 },
    );
    expect(outcome).toMatchObject({ outcome: 'failed', setSpotPriceCalls: 0 });
    expect(marketplace.spotPriceCalls).toEqual([]);
    expect(events.sent.map((s) => s.event).at(-1)).toMatchObject({
      event: 'order.recovery_failed',
      reason: expect.stringMatching(
        /^budget exceeded: \$0\.66 of \$0\.70 today \(key rebid\); this order needs up to \$0\.07$/,
      ),
    });
    expect(await keyUsed('rebid')).toBeCloseTo(0.66, 6);
  });

  it('a replacement round reserves as a new order: its input carries the key and budget, and ReserveQuota refuses it over the budget', async () => {
    // The round's input as the replacer builds it (outbid-replacement.ts: the parent's origin and request, the lease left).
    const round: WorkflowState = aState({
      task_id: 'parent-r501',
      request: { ...aState().request, max_hours: 2 },
      origin: { source: 'webhook', caller: { key: 'repl', budget_usd_per_day: 1 } as never },
      replaces: { task_id: 'parent', order_id: 501, server_id: 3 },
      search: {
        server: { id: SERVER, gpu_array: ['RTX 4090'], price_usd: 0.6, usd_per_hour: 0.66 },
        attempt: 1,
        excluded: [3],
      },
    });
    const fees = { renter_fee_percent: 5, creation_fee_usd: 0.1 };
    const opts = { now: NOW * 1000, limit: 100, key: 'QUOTA#orders', fees };
    await expect(reserveQuota(round, { quota: new FakeSlidingWindow(), spend: store }, opts)).rejects.toThrow(
      new BudgetExceededError('budget exceeded: $0.00 of $1.00 today (key repl); this order needs up to $1.49'),
    );
    // With room for it: reserved like any create-order (worst case with the fees), charged to the key
    const roomy = {
      ...round,
      origin: { source: 'webhook' as const, caller: { key: 'repl', budget_usd_per_day: 5 } as never },
    };
    const outcome = await reserveQuota(roomy, { quota: new FakeSlidingWindow(), spend: store }, opts);
    expect(outcome.reserved).toMatchObject({ key: 'repl', usd: 1.486 });
    expect(await keyUsed('repl')).toBeCloseTo(1.486, 6);
  });
});
