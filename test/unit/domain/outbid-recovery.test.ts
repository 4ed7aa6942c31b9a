/**
 * Outbid recovery's rules (issue 23 item 1, lambdas/domain/recovery/outbid-recovery.ts and on-outbid.ts): the
 * ceiling conversion, the steps (the marketplace's stated step after `exceeded_max_step`), the stop
 * at the ceiling, and which mode falls back to a replacement.
 */
import { MarketplaceRejectedError } from '../../../lambdas/domain/errors';
import type { TrackedOrder } from '../../../lambdas/domain/leases/lease';
import type { Order } from '../../../lambdas/domain/marketplace-types';
import {
  onOutbidProblem,
  REBID_NEEDS_MAX_PRICE_ERROR,
  REBID_NEEDS_SPOT_ERROR,
  REPLACE_NEEDS_SPOT_ERROR,
} from '../../../lambdas/domain/recovery/on-outbid';
import {
  bidCeiling,
  MAX_REBID_CALLS,
  nextBid,
  recoverOutbid,
  type Replacer,
} from '../../../lambdas/domain/recovery/outbid-recovery';
import { aServer, anOrder, NATIVE } from '../../fakes/builders';
import { FakeEventSender } from '../../fakes/event-sender';
import { FakeLeaseStore } from '../../fakes/lease-store';
import { FakeMarketplace } from '../../fakes/marketplace';
import { FakeNotifier } from '../../fakes/notifier';

const NOW = 1_700_000_000;
/** aServer: on-demand 10 coin per period for $1.2 per hour → $0.12 per hour per coin unit. */
const SERVER = 7;

/** A marketplace whose paused order runs again once its bid passes `competitor`; raises above `maxStep` are refused. */
class BiddingMarket extends FakeMarketplace {
  public constructor(
    private readonly competitor: number,
    private readonly maxStep?: number,
    private readonly statesStep = true,
  ) {
    super({ interleave: false });
    this.servers = [aServer(SERVER)];
    this.orders = [anOrder(1, { renting_server: SERVER, type: 'spot', status: 'paused', currency: NATIVE, price: 5 })];
  }

  public override async setSpotPrice(orderId: number, desired: number): Promise<void> {
    const current = this.orders.find((o) => o.order_id === orderId)?.price as number;
    if (this.maxStep !== undefined && desired - current > this.maxStep + 1e-9) {
      this.spotPriceCalls.push({ order_id: orderId, price: desired });
      throw new MarketplaceRejectedError('exceeded_max_step', this.statesStep ? { max_step: this.maxStep } : {});
    }
    await super.setSpotPrice(orderId, desired);
    if (desired > this.competitor)
      this.orders = this.orders.map((o) => (o.order_id === orderId ? { ...o, status: 'running' } : o));
  }
}

const tracked = (patch: Partial<TrackedOrder> = {}): TrackedOrder => ({
  order_id: 1,
  task_id: 't',
  callback_url: 'https://cb',
  spot: true,
  on_outbid: 'rebid',
  max_price: 0.9,
  ...patch,
});

const run = async (market: BiddingMarket, order: TrackedOrder, replacer?: Replacer) => {
  const deps = {
    leases: new FakeLeaseStore(),
    marketplace: market,
    notifier: new FakeNotifier(),
    events: new FakeEventSender(),
    ...(replacer ? { replacer } : {}),
  };
  const lost = market.orders[0] as Order;
  const outcome = await recoverOutbid(deps, order, lost, { now: NOW, since: NOW - 5 });
  return { outcome, events: deps.events.sent.map((s) => s.event), deps };
};

describe('bidCeiling', () => {
  it("converts max_price (USD per hour) to the order currency per period with the server's own rates", () => {
    // $0.9/h at $0.12/h per coin unit = 7.5 coin per period
    expect(bidCeiling(aServer(SERVER), NATIVE, 0.9)).toBe(7.5);
  });

  it('rounds down, so the bid never exceeds max_price', () => {
    const ceiling = bidCeiling(aServer(SERVER), NATIVE, 0.7) as number;
    expect(ceiling * 0.12).toBeLessThanOrEqual(0.7);
    expect(ceiling).toBeCloseTo(0.7 / 0.12, 8);
  });

  it('is undefined when the server states no rate for the coin', () => {
    expect(bidCeiling(aServer(SERVER), 'other-coin', 0.9)).toBeUndefined();
    expect(bidCeiling(undefined, NATIVE, 0.9)).toBeUndefined();
  });

  it('nextBid is one step up, capped at the ceiling', () => {
    expect(nextBid(5, 0.5, 7.5)).toBe(5.5);
    expect(nextBid(7.2, 0.5, 7.5)).toBe(7.5);
  });
});

describe('recoverOutbid: rebid', () => {
  it('raises by 10 % of the outbid bid a step until the order runs again, reporting order.outbid and each order.rebid once', async () => {
    const market = new BiddingMarket(5.9);
    const { outcome, events } = await run(market, tracked());
    expect(outcome.outcome).toBe('running');
    expect(market.spotPriceCalls.map((c) => c.price)).toEqual([5.5, 6]);
    expect(events.map((e) => e.event)).toEqual(['order.outbid', 'order.rebid', 'order.rebid']);
    expect(events[1]).toMatchObject({ old_price: 5, new_price: 5.5 });
  });

  it('after exceeded_max_step, raises by the step the marketplace states', async () => {
    const market = new BiddingMarket(5.5, 0.2);
    const { outcome } = await run(market, tracked());
    expect(outcome.outcome).toBe('running');
    // 5.5 refused (step 0.5 > 0.2); then 0.2 a step: 5.2, 5.4, 5.6
    expect(market.spotPriceCalls.map((c) => c.price)).toEqual([5.5, 5.2, 5.4, 5.6]);
  });

  it('after exceeded_max_step without a stated step, halves the refused step', async () => {
    const market = new BiddingMarket(5.2, 0.2, false);
    const { outcome } = await run(market, tracked());
    expect(outcome.outcome).toBe('running');
    // 0.5 refused, 0.25 refused, then 0.125 a step
    expect(market.spotPriceCalls.map((c) => c.price)).toEqual([5.5, 5.25, 5.125, 5.25]);
  });

  it('stops at the ceiling: the last bid is the ceiling, never above, then order.recovery_failed once', async () => {
    const market = new BiddingMarket(100);
    const { outcome, events } = await run(market, tracked());
    expect(outcome.outcome).toBe('failed');
    const bids = market.spotPriceCalls.map((c) => c.price);
    expect(bids.at(-1)).toBe(7.5);
    expect(Math.max(...bids)).toBe(7.5);
    expect(events.at(-1)).toMatchObject({ event: 'order.recovery_failed' });
    expect(String(events.at(-1)?.reason)).toContain('ceiling of 7.5');
    expect(events.filter((e) => e.event === 'order.recovery_failed')).toHaveLength(1);
  });

  it(`makes at most ${MAX_REBID_CALLS} set_spot_price calls`, async () => {
    const market = new BiddingMarket(100, 0.0001);
    const { outcome } = await run(market, tracked({ max_price: 0.9 }));
    expect(outcome.outcome).toBe('failed');
    expect(market.spotPriceCalls.length).toBe(MAX_REBID_CALLS);
  });

  it('runs once per order: a second recovery of the same order does nothing', async () => {
    const market = new BiddingMarket(100);
    const leases = new FakeLeaseStore();
    const deps = { leases, marketplace: market, notifier: new FakeNotifier(), events: new FakeEventSender() };
    await recoverOutbid(deps, tracked(), market.orders[0] as Order, { now: NOW, since: NOW });
    const calls = market.spotPriceCalls.length;
    expect(
      (await recoverOutbid(deps, tracked(), market.orders[0] as Order, { now: NOW + 60, since: NOW + 60 })).outcome,
    ).toBe('skipped');
    expect(market.spotPriceCalls.length).toBe(calls);
  });

  it("counts the outbid once on the lost order's host record (issue 31 §2)", async () => {
    const market = new BiddingMarket(100);
    const recorded: [number, string, number][] = [];
    const hosts = {
      record: async (serverId: number, outcome: { kind: string }, nowMs: number) => {
        recorded.push([serverId, outcome.kind, nowMs]);
        return undefined;
      },
    };
    const deps = {
      leases: new FakeLeaseStore(),
      marketplace: market,
      notifier: new FakeNotifier(),
      events: new FakeEventSender(),
      hosts,
    };
    await recoverOutbid(deps, tracked(), market.orders[0] as Order, { now: NOW, since: NOW });
    await recoverOutbid(deps, tracked(), market.orders[0] as Order, { now: NOW + 60, since: NOW + 60 });
    expect(recorded).toEqual([[SERVER, 'outbid', NOW * 1000]]);
  });
});

describe('recoverOutbid: replacing', () => {
  const replacer = (started: boolean) => {
    const calls: number[] = [];
    const r: Replacer = {
      replace: async (order) => {
        calls.push(order.order_id);
        return started ? { started: true } : { started: false, reason: 'no server' };
      },
      settle: async () => ({
        pending: 0,
        replaced: 0,
        failed: 0,
        eventsSent: 0,
        marketplaceCalls: 0,
        cancelFailures: [],
      }),
    };
    return { r, calls };
  };

  it('replace starts a replacement at once, without rebidding or reporting a failure', async () => {
    const market = new BiddingMarket(100);
    const { r, calls } = replacer(true);
    const { outcome, events } = await run(market, tracked({ on_outbid: 'replace' }), r);
    expect(outcome.outcome).toBe('replacing');
    expect(calls).toEqual([1]);
    expect(market.spotPriceCalls).toHaveLength(0);
    expect(events.map((e) => e.event)).toEqual(['order.outbid']);
  });

  it('rebid_then_replace replaces once the bid reached its ceiling', async () => {
    const market = new BiddingMarket(100);
    const { r, calls } = replacer(true);
    const { outcome, events } = await run(market, tracked({ on_outbid: 'rebid_then_replace' }), r);
    expect(outcome.outcome).toBe('replacing');
    expect(market.spotPriceCalls.at(-1)?.price).toBe(7.5);
    expect(calls).toEqual([1]);
    expect(events.filter((e) => e.event === 'order.recovery_failed')).toHaveLength(0);
  });

  it('rebid_then_replace that reruns the order does not replace it', async () => {
    const market = new BiddingMarket(5.2);
    const { r, calls } = replacer(true);
    expect((await run(market, tracked({ on_outbid: 'rebid_then_replace' }), r)).outcome.outcome).toBe('running');
    expect(calls).toEqual([]);
  });

  it('a replacement that cannot start: order.recovery_failed once, naming both reasons', async () => {
    const market = new BiddingMarket(100);
    const { r } = replacer(false);
    const { outcome, events } = await run(market, tracked({ on_outbid: 'rebid_then_replace' }), r);
    expect(outcome.outcome).toBe('failed');
    const failed = events.filter((e) => e.event === 'order.recovery_failed');
    expect(failed).toHaveLength(1);
    expect(String(failed[0]?.reason)).toMatch(/ceiling.*; replacement not started: no server/);
  });
});

describe('onOutbidProblem', () => {
  it.each([
    [{ on_outbid: 'replace' as const }, undefined],
    [{ on_outbid: 'replace' as const, use_spot: false }, REPLACE_NEEDS_SPOT_ERROR],
    [{ on_outbid: 'rebid_then_replace' as const, max_price: 1 }, undefined],
    [{ on_outbid: 'rebid_then_replace' as const }, REBID_NEEDS_MAX_PRICE_ERROR],
    [{ on_outbid: 'rebid_then_replace' as const, max_price: 1, use_spot: false }, REBID_NEEDS_SPOT_ERROR],
    [{ on_outbid: 'notify' as const, use_spot: false }, undefined],
  ])('%j → %s', (body, problem) => {
    expect(onOutbidProblem(body)).toBe(problem);
  });
});
