import {
  MarketplaceRateLimitedError,
  MarketplaceRejectedError,
  MarketplaceUnavailableError,
} from '../../../lambdas/domain/errors';
import { sweepFleet, type FleetWatchDeps } from '../../../lambdas/domain/leases/fleet-watch';
import { extendOrder, setSpotPrice } from '../../../lambdas/domain/leases/lease-jobs';
import { runCancel } from '../../../lambdas/domain/requests/jobs';
import { anOrder, aServer } from '../../fakes/builders';
import { FakeEventSender } from '../../fakes/event-sender';
import { FakeLeaseStore } from '../../fakes/lease-store';
import { FakeMarketplace } from '../../fakes/marketplace';
import { FakeNotifier } from '../../fakes/notifier';
import { seedLeases } from '../../fakes/seed-leases';

const NOW = 1_700_000_000;

const setup = () => {
  const leases = new FakeLeaseStore();
  const marketplace = new FakeMarketplace();
  const notifier = new FakeNotifier();
  const events = new FakeEventSender();
  // One object satisfies the deps of all three use cases.
  const deps = { leases, marketplace, notifier, events } satisfies FleetWatchDeps;
  return { leases, marketplace, notifier, events, deps };
};

const CB = 'https://receiver.example/hook';

describe('Function: sweepFleet', () => {
  it('makes no marketplace call when nothing is watched', async () => {
    const { deps, marketplace } = setup();
    const report = await sweepFleet(deps, { now: NOW });
    expect(marketplace.listCalls).toBe(0);
    expect(report).toMatchObject({ due: 0, marketplaceCalls: 0 });
  });

  it('cancels an expired lease once, posts the chat text and sends order.lease_expired', async () => {
    // Prepare
    const { deps, leases, marketplace, notifier, events } = setup();
    marketplace.orders = [anOrder(42)];
    await leases.track(
      { order_id: 42, task_id: 'task-42', callback_url: CB },
      { now: NOW - 7200, status: 'running', lease: { expires_at: NOW - 10, hours: 2 } },
    );
    // Act
    const first = await sweepFleet(deps, { now: NOW });
    const second = await sweepFleet(deps, { now: NOW + 60 });
    // Assess
    expect(marketplace.cancelCalls).toEqual([42]);
    expect(first).toMatchObject({ due: 1, cancelled: 1, failedCancels: 0, eventsSent: 1, marketplaceCalls: 2 });
    expect(second).toMatchObject({ due: 0, cancelled: 0, statusChanges: 0, marketplaceCalls: 0 });
    expect(notifier.chats).toEqual(['Order 42 cancelled: its 2 h lease ended']);
    expect(events.sent).toEqual([
      {
        url: CB,
        id: 'lease_expired:42:1699999990',
        event: {
          event: 'order.lease_expired',
          order_id: 42,
          task_id: 'task-42',
          occurred_at: NOW,
          lease_expires_at: NOW - 10,
        },
      },
    ]);
    expect(leases.watch.has(42)).toBe(false); // not reported as "gone" by the next sweep
  });

  it('cancels exactly once when two sweeps overlap', async () => {
    const { deps, leases, marketplace, notifier, events } = setup();
    await seedLeases(leases, marketplace, { total: 30, due: 10, now: NOW });
    const reports = await Promise.all([sweepFleet(deps, { now: NOW }), sweepFleet(deps, { now: NOW + 1 })]);
    expect(marketplace.cancelCalls.sort((a, b) => a - b)).toEqual([1, 2, 3, 4, 5, 6, 7, 8, 9, 10]);
    expect(reports[0].cancelled + reports[1].cancelled).toBe(10);
    expect(notifier.chats.filter((t) => t.includes('lease ended'))).toHaveLength(10);
    expect(events.sent).toHaveLength(10);
  });

  it('counts a failed cancel, gives the claim back and retries on the next sweep', async () => {
    const { deps, leases, marketplace, notifier } = setup();
    marketplace.orders = [anOrder(5)];
    marketplace.cancelFailures.set(5, new MarketplaceUnavailableError('timeout'));
    await leases.track(
      { order_id: 5, task_id: 't5' },
      { now: NOW - 3600, status: 'running', lease: { expires_at: NOW - 1, hours: 1 } },
    );
    const failed = await sweepFleet(deps, { now: NOW });
    expect(failed).toMatchObject({
      cancelled: 0,
      failedCancels: 1,
      cancelFailures: [{ order_id: 5, reason: 'timeout' }],
    });
    expect(notifier.chats).toEqual([]);
    marketplace.cancelFailures.clear();
    const retried = await sweepFleet(deps, { now: NOW + 60 });
    expect(retried).toMatchObject({ cancelled: 1, failedCancels: 0 });
    expect(marketplace.cancelCalls).toEqual([5, 5]);
  });

  it('lets another sweep take over a claim left by a sweep that died', async () => {
    const { deps, leases, marketplace } = setup();
    marketplace.orders = [anOrder(5)];
    await leases.track(
      { order_id: 5, task_id: 't5' },
      { now: NOW - 3600, status: 'running', lease: { expires_at: NOW - 1, hours: 1 } },
    );
    expect(await leases.claimCancel(5, NOW - 1, NOW, 300)).toBe(true); // the dead sweep
    expect(await sweepFleet(deps, { now: NOW + 60 })).toMatchObject({ cancelled: 0, skippedClaims: 1 });
    expect(await sweepFleet(deps, { now: NOW + 301 })).toMatchObject({ cancelled: 1 });
    expect(marketplace.cancelCalls).toEqual([5]);
  });

  it('closes an expired lease without a call when the order is already gone, and reports it gone', async () => {
    const { deps, leases, marketplace, notifier, events } = setup();
    await leases.track(
      { order_id: 8, task_id: 't8', callback_url: CB, spot: true },
      { now: NOW - 3600, status: 'running', lease: { expires_at: NOW - 5, hours: 1 } },
    );
    const report = await sweepFleet(deps, { now: NOW });
    expect(marketplace.cancelCalls).toEqual([]);
    expect(report).toMatchObject({ closed: 1, cancelled: 0, statusChanges: 1, marketplaceCalls: 1 });
    expect(notifier.chats).toEqual([
      'Order 8 is gone from the active orders (was running): spot order, possibly outbid',
    ]);
    expect(events.sent.map((e) => e.event)).toEqual([
      {
        event: 'order.status_changed',
        order_id: 8,
        task_id: 't8',
        occurred_at: NOW,
        lease_expires_at: NOW - 5,
        from: 'running',
        to: 'gone',
      },
    ]);
    expect(leases.orders.get(8)?.ended).toBe('order_gone');
  });

  it('warns once per lease end and again after an extension', async () => {
    const { deps, leases, marketplace, notifier, events } = setup();
    marketplace.orders = [anOrder(3)];
    await leases.track(
      { order_id: 3, task_id: 't3', callback_url: CB },
      { now: NOW - 3600, status: 'running', lease: { expires_at: NOW + 540, hours: 1 } },
    );
    await sweepFleet(deps, { now: NOW });
    await sweepFleet(deps, { now: NOW + 60 });
    expect(notifier.chats).toEqual(['Order 3: its lease ends in 9 min']);
    expect(events.sent.map((e) => e.id)).toEqual([`lease_expiring:3:${NOW + 540}`]);

    await extendOrder({ order_id: 3, hours: 0.1 }, { task_id: 'ext', now: NOW + 120 }, deps);
    const report = await sweepFleet(deps, { now: NOW + 600 });
    expect(report).toMatchObject({ warned: 1, cancelled: 0 });
    expect(notifier.chats[1]).toBe('Order 3: its lease ends in 5 min');
  });

  it('honours LEASE_WARNING_SECONDS', async () => {
    const { deps, leases, marketplace } = setup();
    marketplace.orders = [anOrder(3)];
    await leases.track(
      { order_id: 3, task_id: 't3' },
      { now: NOW, status: 'running', lease: { expires_at: NOW + 200, hours: 1 } },
    );
    expect(await sweepFleet(deps, { now: NOW, warningSeconds: 120 })).toMatchObject({ due: 0, warned: 0 });
    expect(await sweepFleet(deps, { now: NOW + 80, warningSeconds: 120 })).toMatchObject({ due: 1, warned: 1 });
  });

  it('reports status changes of watched orders only, with one my_orders read', async () => {
    const { deps, leases, marketplace, notifier, events } = setup();
    for (const id of [1, 2, 3])
      await leases.track(
        { order_id: id, task_id: `t${id}`, callback_url: CB, spot: id === 2 },
        { now: NOW - 100, status: 'running' },
      );
    marketplace.orders = [
      anOrder(1),
      anOrder(2, { status: 'paused', type: 'spot' }),
      anOrder(3, { status: 'expired' }),
      anOrder(77, { status: 'paused' }),
    ];
    const report = await sweepFleet(deps, { now: NOW });
    expect(marketplace.listCalls).toBe(1);
    expect(report).toMatchObject({ statusChanges: 2, eventsSent: 2, marketplaceCalls: 1 });
    expect(notifier.chats).toEqual([
      'Order 2 is now paused (was running): spot order, possibly outbid',
      'Order 3 is now expired (was running)',
    ]);
    expect(events.sent.map((e) => [e.id, e.event.from, e.event.to])).toEqual([
      [`status_changed:2:running:paused:${NOW - 100}`, 'running', 'paused'],
      [`status_changed:3:running:expired:${NOW - 100}`, 'running', 'expired'],
    ]);
    expect(leases.watch.get(2)).toEqual({ status: 'paused', since: NOW, spot: true });
    expect(leases.watch.has(3)).toBe(false);

    // Nothing new: nothing reported; a second change of 2 is a new occurrence.
    await sweepFleet(deps, { now: NOW + 60 });
    expect(notifier.chats).toHaveLength(2);
    marketplace.orders = [anOrder(1), anOrder(2, { status: 'running', type: 'spot' })];
    await sweepFleet(deps, { now: NOW + 120 });
    expect(events.sent.map((e) => e.id)[2]).toBe(`status_changed:2:paused:running:${NOW}`);
  });

  it('settles an order a cancel-order ended at the cancel, not at the sweep that sees it gone; one that ended on its own at the sweep (issue 38 §9)', async () => {
    // Prepare: two orders watched; 42 is cancelled by the relay 37 s before the sweep, 43 ends on its own
    const { deps, leases, marketplace, notifier } = setup();
    const settled: { task: string; ended_at: number }[] = [];
    const spend = {
      settle: async (task: string, end: { ended_at: number }) => {
        settled.push({ task, ended_at: end.ended_at });
        return undefined;
      },
    };
    for (const id of [42, 43])
      await leases.track({ order_id: id, task_id: `t${id}` }, { now: NOW - 100, status: 'running' });
    marketplace.orders = [anOrder(42), anOrder(43)];
    await runCancel({ order_id: 42 }, { marketplace, notifier, leases }, (NOW - 37) * 1000);
    marketplace.orders = [anOrder(42, { status: 'expired' })];
    // Act
    await sweepFleet({ ...deps, spend }, { now: NOW });
    // Assess
    expect(settled).toEqual([
      { task: 't42', ended_at: NOW - 37 },
      { task: 't43', ended_at: NOW },
    ]);
  });

  it('reports a status change once when two sweeps overlap', async () => {
    const { deps, leases, marketplace, notifier, events } = setup();
    await leases.track({ order_id: 1, task_id: 't1', callback_url: CB }, { now: NOW - 100, status: 'running' });
    marketplace.orders = [anOrder(1, { status: 'paused' })];
    await Promise.all([sweepFleet(deps, { now: NOW }), sweepFleet(deps, { now: NOW + 1 })]);
    expect(notifier.chats).toEqual(['Order 1 is now paused (was running)']);
    expect(events.sent).toHaveLength(1);
  });

  it('sends no event for an order placed without callback_url, and counts failed deliveries', async () => {
    const { deps, leases, notifier, events } = setup();
    // Both orders are gone from my_orders: two status changes.
    await leases.track({ order_id: 1, task_id: 't1' }, { now: NOW - 100, status: 'running' });
    await leases.track({ order_id: 2, task_id: 't2', callback_url: CB }, { now: NOW - 100, status: 'running' });
    events.fail = true;
    const report = await sweepFleet(deps, { now: NOW });
    expect(notifier.chats).toHaveLength(2);
    expect(report).toMatchObject({ eventsSent: 0, eventsFailed: 1 });
  });

  it('handles at most `limit` leases per sweep', async () => {
    const { deps, leases, marketplace } = setup();
    await seedLeases(leases, marketplace, { total: 20, due: 10, now: NOW });
    expect(await sweepFleet(deps, { now: NOW, limit: 4 })).toMatchObject({ due: 4, cancelled: 4 });
    expect(await sweepFleet(deps, { now: NOW + 60, limit: 100 })).toMatchObject({ due: 6, cancelled: 6 });
  });

  it('stops where canContinue says so and leaves the rest to the next sweep untouched', async () => {
    const { deps, leases, marketplace } = setup();
    await seedLeases(leases, marketplace, { total: 20, due: 10, now: NOW });
    let budget = 3;
    const first = await sweepFleet(deps, { now: NOW, canContinue: () => budget-- > 0 });
    expect(first).toMatchObject({ due: 10, cancelled: 3, deferred: 7, failedCancels: 0, skippedClaims: 0 });
    expect(marketplace.cancelCalls).toHaveLength(3);
    const second = await sweepFleet(deps, { now: NOW + 60 });
    expect(second).toMatchObject({ due: 7, cancelled: 7, deferred: 0 });
    expect(new Set(marketplace.cancelCalls).size).toBe(10);
  });

  it('defers status changes too when out of time, and reports them on the next sweep', async () => {
    const { deps, leases, marketplace, notifier } = setup();
    marketplace.orders = [anOrder(1), anOrder(2)];
    await leases.track({ order_id: 1, task_id: 't1' }, { now: NOW - 100, status: 'running' });
    await leases.track({ order_id: 2, task_id: 't2' }, { now: NOW - 100, status: 'running' });
    marketplace.orders = [];
    expect(await sweepFleet(deps, { now: NOW, canContinue: () => false })).toMatchObject({
      statusChanges: 0,
      deferred: 2,
    });
    expect(notifier.chats).toEqual([]);
    expect(await sweepFleet(deps, { now: NOW + 60 })).toMatchObject({ statusChanges: 2, deferred: 0 });
  });

  it('throws when my_orders cannot be read, deciding nothing', async () => {
    const { deps, leases, marketplace } = setup();
    await leases.track(
      { order_id: 1, task_id: 't1' },
      { now: NOW - 100, status: 'running', lease: { expires_at: NOW - 1, hours: 1 } },
    );
    marketplace.listOrders = async () => {
      throw new MarketplaceRateLimitedError();
    };
    await expect(sweepFleet(deps, { now: NOW })).rejects.toThrow(MarketplaceRateLimitedError);
    expect(marketplace.cancelCalls).toEqual([]);
  });

  it('sweeps 1,000 leases of which 100 are due with 101 marketplace calls (the bench scenario)', async () => {
    const { deps, leases, marketplace } = setup();
    await seedLeases(leases, marketplace, { total: 1000, due: 100, now: NOW });
    const report = await sweepFleet(deps, { now: NOW });
    expect(report).toMatchObject({ due: 100, cancelled: 100, marketplaceCalls: 101, failedCancels: 0 });
    expect(marketplace.listCalls).toBe(1);
  });
});

describe('Function: extendOrder', () => {
  it('fails for an order that is not active in my_orders', async () => {
    const { deps, marketplace } = setup();
    marketplace.orders = [anOrder(9, { status: 'expired' })];
    expect(await extendOrder({ order_id: 9, hours: 1 }, { task_id: 'x', now: NOW }, deps)).toEqual({
      success: false,
      error: 'order 9 is not active',
    });
    expect(await extendOrder({ order_id: 10, hours: 1 }, { task_id: 'x', now: NOW }, deps)).toEqual({
      success: false,
      error: 'order 10 is not active',
    });
  });

  it('moves the end to max(now, end) + hours', async () => {
    const { deps, leases, marketplace } = setup();
    marketplace.orders = [anOrder(1), anOrder(2)];
    await leases.track(
      { order_id: 1, task_id: 't1' },
      { now: NOW, status: 'running', lease: { expires_at: NOW + 1000, hours: 1 } },
    );
    await leases.track(
      { order_id: 2, task_id: 't2' },
      { now: NOW, status: 'running', lease: { expires_at: NOW - 30, hours: 1 } },
    );
    expect(await extendOrder({ order_id: 1, hours: 2 }, { task_id: 'x', now: NOW }, deps)).toEqual({
      success: true,
      order_id: 1,
      lease_expires_at: NOW + 1000 + 7200,
    });
    expect(await extendOrder({ order_id: 2, hours: 0.5 }, { task_id: 'x', now: NOW }, deps)).toEqual({
      success: true,
      order_id: 2,
      lease_expires_at: NOW + 1800,
    });
    expect(leases.orders.get(1)?.hours).toBe(3);
  });

  it('gives an order without a lease one, watched and reporting to the extend request', async () => {
    const { deps, leases, marketplace } = setup();
    marketplace.orders = [anOrder(4, { type: 'spot' })];
    const result = await extendOrder({ order_id: 4, hours: 1, callback_url: CB }, { task_id: 'ext-4', now: NOW }, deps);
    expect(result).toEqual({ success: true, order_id: 4, lease_expires_at: NOW + 3600 });
    expect(await leases.get(4)).toEqual({
      order_id: 4,
      task_id: 'ext-4',
      callback_url: CB,
      spot: true,
      expires_at: NOW + 3600,
      hours: 1,
    });
    expect(leases.watch.get(4)).toEqual({ status: 'running', since: NOW, spot: true });
  });

  it('keeps the placing task of a watched order without a lease', async () => {
    const { deps, leases, marketplace } = setup();
    marketplace.orders = [anOrder(4)];
    await leases.track({ order_id: 4, task_id: 'placed', callback_url: CB }, { now: NOW - 10, status: 'running' });
    await extendOrder({ order_id: 4, hours: 1 }, { task_id: 'ext', now: NOW }, deps);
    expect(await leases.get(4)).toMatchObject({ task_id: 'placed', callback_url: CB, expires_at: NOW + 3600 });
  });

  it('applies two concurrent extensions one after the other', async () => {
    const { deps, leases, marketplace } = setup();
    marketplace.orders = [anOrder(1)];
    await leases.track(
      { order_id: 1, task_id: 't1' },
      { now: NOW, status: 'running', lease: { expires_at: NOW + 100, hours: 1 } },
    );
    const results = await Promise.all([
      extendOrder({ order_id: 1, hours: 1 }, { task_id: 'a', now: NOW }, deps),
      extendOrder({ order_id: 1, hours: 2 }, { task_id: 'b', now: NOW }, deps),
    ]);
    expect(results.every((r) => r.success)).toBe(true);
    expect(leases.orders.get(1)?.expires_at).toBe(NOW + 100 + 3 * 3600);
  });

  it('fails for an order whose lease ended or is being cancelled', async () => {
    const { deps, leases, marketplace } = setup();
    marketplace.orders = [anOrder(1)];
    await leases.track(
      { order_id: 1, task_id: 't1' },
      { now: NOW, status: 'running', lease: { expires_at: NOW - 1, hours: 1 } },
    );
    await leases.claimCancel(1, NOW - 1, NOW, 300);
    expect(await extendOrder({ order_id: 1, hours: 1 }, { task_id: 'x', now: NOW }, deps)).toEqual({
      success: false,
      error: 'order 1 is not active',
    });
  });
});

describe('Function: setSpotPrice', () => {
  const spot = (price: number) => anOrder(6, { type: 'spot', price });

  it("sets the price and answers the task result: the marketplace value in the order currency, and USD per hour at the server's rates", async () => {
    const { deps, marketplace } = setup();
    marketplace.orders = [spot(1)];
    // 1 bitcoin per day is $2500/h on this server (its on-demand price: 0.0001 BTC a day = $0.25/h).
    marketplace.servers = [
      aServer(1006, {
        allowed_coins: ['bitcoin'],
        price: { on_demand: { bitcoin: 0.0001 }, spot: {}, usd_per_hour: { on_demand: { bitcoin: 0.25 } } },
      }),
    ];
    expect(await setSpotPrice({ order_id: 6, desired_price: 1.5 }, { now: NOW }, deps)).toEqual({
      success: true,
      order_id: 6,
      desired_price: 1.5,
      currency: 'bitcoin',
      desired_price_usd_per_hour: 3750,
    });
    expect(marketplace.spotPriceCalls).toEqual([{ order_id: 6, price: 1.5 }]);
  });

  it('still succeeds, with desired_price_usd_per_hour null, when the server is not listed or the listing cannot be read', async () => {
    const { deps, marketplace } = setup();
    marketplace.orders = [spot(1)];
    expect(await setSpotPrice({ order_id: 6, desired_price: 1.2 }, { now: NOW }, deps)).toMatchObject({
      success: true,
      desired_price_usd_per_hour: null,
    });
    jest.spyOn(marketplace, 'listServers').mockRejectedValue(new MarketplaceUnavailableError('down'));
    expect(await setSpotPrice({ order_id: 6, desired_price: 1.3 }, { now: NOW }, deps)).toMatchObject({
      success: true,
      desired_price_usd_per_hour: null,
    });
    expect(marketplace.spotPriceCalls).toHaveLength(2);
  });

  it('refuses a raise to more than 10 × the current price itself (a likely unit mistake), naming both prices', async () => {
    const { deps, marketplace } = setup();
    // A bitcoin spot order at 0.00004 BTC a day; 0.5 "meant as USD/h" would be 0.5 BTC a day.
    marketplace.orders = [anOrder(6, { type: 'spot', price: 0.00004, currency: 'bitcoin' })];
    marketplace.servers = [
      aServer(1006, {
        allowed_coins: ['bitcoin'],
        price: { on_demand: { bitcoin: 0.00004 }, spot: {}, usd_per_hour: { on_demand: { bitcoin: 0.1 } } },
      }),
    ];
    expect(await setSpotPrice({ order_id: 6, desired_price: 0.5 }, { now: NOW }, deps)).toEqual({
      success: false,
      error:
        'spot price 0.5 bitcoin per day ($1250/hr) for order 6 is more than 10 × its current 0.00004 bitcoin per day ($0.1/hr); ' +
        'desired_price is in the order currency per day, not USD per hour (raise in steps if meant)',
    });
    expect(marketplace.spotPriceCalls).toEqual([]);
    // Exactly 10 × passes.
    expect((await setSpotPrice({ order_id: 6, desired_price: 0.0004 }, { now: NOW }, deps)).success).toBe(true);
  });

  it('refuses a second decrease within 600 s itself, without a marketplace call', async () => {
    const { deps, marketplace } = setup();
    marketplace.orders = [spot(1)];
    expect((await setSpotPrice({ order_id: 6, desired_price: 0.9 }, { now: NOW }, deps)).success).toBe(true);
    const refused = await setSpotPrice({ order_id: 6, desired_price: 0.8 }, { now: NOW + 100 }, deps);
    expect(refused).toEqual({
      success: false,
      error:
        'spot price of order 6 was lowered 100 s ago; the marketplace allows one decrease per 600 s (retry in 500 s)',
    });
    expect(marketplace.spotPriceCalls).toHaveLength(1);
    // Raising is never limited; a decrease 600 s later goes through.
    expect((await setSpotPrice({ order_id: 6, desired_price: 2 }, { now: NOW + 200 }, deps)).success).toBe(true);
    expect((await setSpotPrice({ order_id: 6, desired_price: 1 }, { now: NOW + 600 }, deps)).success).toBe(true);
    expect(marketplace.spotPriceCalls).toHaveLength(3);
  });

  it('names the marketplace reason of a refusal, and a refused decrease does not count', async () => {
    const { deps, marketplace } = setup();
    marketplace.orders = [spot(1)];
    marketplace.spotPriceFailure = new MarketplaceRejectedError('too_low_price', { min_price: 0.7 });
    expect(await setSpotPrice({ order_id: 6, desired_price: 0.5 }, { now: NOW }, deps)).toEqual({
      success: false,
      error:
        'marketplace refused spot price 0.5 for order 6: too_low_price (min_price 0.7); the minimum is 0.7 bitcoin per day',
    });
    marketplace.spotPriceFailure = undefined;
    expect((await setSpotPrice({ order_id: 6, desired_price: 0.8 }, { now: NOW + 10 }, deps)).success).toBe(true);
  });

  it.each([
    [
      'production: min_price sent',
      { min_price: 0.0002 },
      ' (min_price 0.0002); the minimum is 0.0002 bitcoin per day ($0.5/h)',
    ],
    ["the spec's dialect: the server's listed spot price", {}, '; the minimum is 0.0002 bitcoin per day ($0.5/h)'],
  ])('too_low_price names the minimum in the order currency per day and USD/h (%s)', async (_what, details, tail) => {
    // Prepare: the server's spot price is 0.0002 BTC a day = $0.5/h at its rates.
    const { deps, marketplace } = setup();
    marketplace.orders = [anOrder(6, { type: 'spot', price: 0.0003 })];
    marketplace.servers = [
      aServer(1006, {
        allowed_coins: ['bitcoin'],
        price: {
          on_demand: { bitcoin: 0.0004 },
          spot: { bitcoin: 0.0002 },
          usd_per_hour: { on_demand: { bitcoin: 1 } },
        },
      }),
    ];
    marketplace.spotPriceFailure = new MarketplaceRejectedError('too_low_price', details);
    // Act
    const refused = await setSpotPrice({ order_id: 6, desired_price: 0.0001 }, { now: NOW }, deps);
    // Assess
    expect(refused).toEqual({
      success: false,
      error: `marketplace refused spot price 0.0001 for order 6: too_low_price${tail}`,
    });
  });

  it('throws transient errors for the job retry', async () => {
    const { deps, marketplace } = setup();
    marketplace.orders = [spot(1)];
    marketplace.spotPriceFailure = new MarketplaceUnavailableError('timeout');
    await expect(setSpotPrice({ order_id: 6, desired_price: 2 }, { now: NOW }, deps)).rejects.toThrow(
      MarketplaceUnavailableError,
    );
  });

  it('fails for an inactive or on-demand order', async () => {
    const { deps, marketplace } = setup();
    marketplace.orders = [anOrder(6, { type: 'on-demand' })];
    expect(await setSpotPrice({ order_id: 6, desired_price: 1 }, { now: NOW }, deps)).toEqual({
      success: false,
      error: 'order 6 is not a spot order',
    });
    expect(await setSpotPrice({ order_id: 5, desired_price: 1 }, { now: NOW }, deps)).toEqual({
      success: false,
      error: 'order 5 is not active',
    });
    expect(marketplace.spotPriceCalls).toEqual([]);
  });
});
