import { findServer } from '../../../../lambdas/domain/create-order/find-server';
import type { SearchResult } from '../../../../lambdas/domain/create-order/workflow-state';
import { NoServerAvailableError, SoftTimeoutError } from '../../../../lambdas/domain/errors';
import { aServer, aState, NATIVE } from '../../../fakes/builders';
import { FakeClaims } from '../../../fakes/claims';
import { FakeMarketplace } from '../../../fakes/marketplace';
import { FakeTasks } from '../../../fakes/tasks';

const NOW = 1_000_000;
const search = (id = 1, attempt = 1, excluded: number[] = []): SearchResult => ({
  server: { id, gpu_array: ['NVIDIA RTX 4090'], price_usd: 0.6, spot_bid: 5.5 },
  attempt,
  excluded,
});

describe('Function: findServer', () => {
  const setup = () => {
    const marketplace = new FakeMarketplace();
    const claims = new FakeClaims();
    const tasks = new FakeTasks();
    tasks.seed();
    return { marketplace, claims, tasks };
  };

  it('claims the first matching server and marks the task running', async () => {
    // Prepare
    const deps = setup();
    deps.marketplace.servers = [aServer(1, { rented: true }), aServer(2), aServer(3)];
    // Act
    const result = await findServer(aState(), deps, NOW);
    // Assess
    expect(result).toEqual({
      server: {
        id: 2,
        gpu_array: ['NVIDIA RTX 4090'],
        price_usd: 0.6,
        spot_bid: 5.5,
        usd_per_hour: 0.66,
        // The coin's USD rate as listed (1.2 USD/h for 10 a day), kept to convert the marketplace's spend.
        usd_per_coin: expect.closeTo(2.88, 9),
      },
      attempt: 1,
      excluded: [],
      chosen: 'first of 2 matches at $0.6/h',
    });
    expect(deps.claims.holders.get(2)).toBe('task-1');
    expect(deps.tasks.records.get('task-1')?.state).toBe('running');
  });

  it('run again from its start (issue 39), goes back to the server its order rents; a refused intent does not', async () => {
    // Prepare: an earlier run placed order 77 on server 3, which its own order now rents
    const deps = setup();
    deps.marketplace.servers = [aServer(1, { rented: true }), aServer(2), aServer(3, { rented: true })];
    deps.tasks.seed('task-1', { server_id: 3, order_id: 77 });
    deps.tasks.seed('task-2', { server_id: 3, order_intent_at: NOW - 5_000 });
    deps.tasks.seed('task-3', { server_id: 3, order_intent_at: NOW - 5_000, order_refused_at: NOW - 4_000 });
    // Act
    const placed = await findServer(aState(), deps, NOW);
    deps.claims.holders.clear();
    const intended = await findServer({ ...aState(), task_id: 'task-2' }, deps, NOW);
    deps.claims.holders.clear();
    const refused = await findServer({ ...aState(), task_id: 'task-3' }, deps, NOW);
    // Assess
    expect(placed.server.id).toBe(3);
    expect(intended.server.id).toBe(3);
    expect(refused.server.id).toBe(2);
  });

  it('a resumed standing order run again from its start goes back to its resume server, which its own order rents (issue 39)', async () => {
    // Prepare: the watch resumed task-1 on server 3; the run placed an order there before npm start was
    // killed, so server 3 is listed rented. task-2 has an intent on server 3 from an earlier round but is
    // resumed on server 2.
    const deps = setup();
    deps.marketplace.servers = [aServer(2), aServer(3, { rented: true })];
    deps.tasks.seed('task-1', { server_id: 3, order_intent_at: NOW - 5_000 });
    deps.tasks.seed('task-2', { server_id: 3, order_intent_at: NOW - 5_000 });
    // Act
    const resumed = await findServer({ ...aState(), resume: { server_id: 3, round: 1 } }, deps, NOW);
    deps.claims.holders.clear();
    const other = await findServer({ ...aState(), task_id: 'task-2', resume: { server_id: 2, round: 1 } }, deps, NOW);
    // Assess: server 3 again, so PlaceOrder adopts the order there instead of the watch cancelling it
    expect(resumed.server.id).toBe(3);
    expect(other.server.id).toBe(2);
  });

  it('under a budget skips a server with no on-demand USD price for an on-demand order (never its spot price), and says so', async () => {
    // Prepare: server 1 states a spot USD price but no on-demand one; server 2 both
    const deps = setup();
    const noOnDemandUsd = aServer(1, { price: { ...aServer(1).price, usd_per_hour: { on_demand: {}, spot: 0.6 } } });
    deps.marketplace.servers = [noOnDemandUsd, aServer(2)];
    const onDemand = aState({ request: { ...aState().request, use_spot: false, max_hours: 2 } });
    deps.tasks.seed('task-2');
    deps.tasks.seed('task-3');
    // Act
    const chosen = await findServer(onDemand, { ...deps, spendLimitUsdPerDay: 10 }, NOW);
    const withoutBudget = await findServer({ ...onDemand, task_id: 'task-2' }, deps, NOW);
    // Assess: server 2 under the budget; without one, the first server is fine
    expect(chosen.server).toMatchObject({ id: 2, usd_per_hour: 1.2 });
    expect(withoutBudget.server.id).toBe(1);
    expect(withoutBudget.server.usd_per_hour).toBeUndefined();

    // Only the server without an on-demand USD price: the failure names it and why
    deps.marketplace.servers = [noOnDemandUsd];
    deps.claims.holders.clear();
    await expect(
      findServer({ ...onDemand, task_id: 'task-3' }, { ...deps, spendLimitUsdPerDay: 10 }, NOW),
    ).rejects.toThrow('No 4090 available; tried server 1 (no on-demand USD price to reserve under a budget)');
  });

  it('skips servers whose maximum rental time (mrl, hours) is below the lease; without a lease any mrl fits', async () => {
    // Prepare: server 1 may be rented 24 h, server 2 for 48 h
    const deps = setup();
    deps.marketplace.servers = [aServer(1, { mrl: 24 }), aServer(2, { mrl: 48 })];
    const leased = aState({ request: { ...aState().request, max_hours: 30 } });
    // Act + Assess
    expect((await findServer(leased, deps, NOW)).server.id).toBe(2);
    deps.claims.holders.clear();
    expect((await findServer(aState({ request: { ...aState().request, max_hours: 24 } }), deps, NOW)).server.id).toBe(
      1,
    );
    deps.claims.holders.clear();
    expect((await findServer(aState(), deps, NOW)).server.id).toBe(1);
    deps.claims.holders.clear();
    await expect(
      findServer(aState({ request: { ...aState().request, max_hours: 49 } }), deps, NOW),
    ).rejects.toMatchObject({ name: 'NoServerAvailableError' });
  });

  it('skips a server another task holds', async () => {
    const deps = setup();
    deps.marketplace.servers = [aServer(1), aServer(2)];
    deps.claims.holders.set(1, 'other-task');
    expect((await findServer(aState(), deps, NOW)).server.id).toBe(2);
  });

  it('excludes the server a placement was rejected on and counts the attempt', async () => {
    const deps = setup();
    deps.marketplace.servers = [aServer(1), aServer(2)];
    const state = aState({
      search: search(1, 1),
      placement: { retry: true, server_id: 1, reason: 'server-already-rented' },
    });
    const result = await findServer(state, deps, NOW);
    expect(result).toMatchObject({ attempt: 2, excluded: [1], server: { id: 2 } });
  });

  it('has no spot bid for on-demand requests', async () => {
    const deps = setup();
    deps.marketplace.servers = [aServer(1)];
    const state = aState();
    const result = await findServer({ ...state, request: { ...state.request, use_spot: false } }, deps, NOW);
    expect(result.server.spot_bid).toBeUndefined();
  });

  it('throws NoServerAvailableError with the spec text when nothing matches', async () => {
    const deps = setup();
    deps.marketplace.servers = [
      aServer(1, { price: { on_demand: {}, spot: { [NATIVE]: 5 }, usd_per_hour: { on_demand: {}, spot: 3 } } }),
    ];
    const state = aState();
    const act = findServer({ ...state, request: { ...state.request, max_price: 2 } }, deps, NOW);
    await expect(act).rejects.toThrow(new NoServerAvailableError('No 4090 available under $2/hr'));
  });

  it('leaves out hosts the relay avoids and counts them in the failure text (issue 31 §2)', async () => {
    const deps = { ...setup(), hosts: { avoided: async () => new Set([1, 2]) } };
    deps.marketplace.servers = [aServer(1), aServer(2), aServer(3)];
    expect((await findServer(aState(), deps, NOW)).server.id).toBe(3);
    deps.marketplace.servers = [aServer(1), aServer(2)];
    await expect(findServer(aState({ task_id: 't2' }), deps, NOW)).rejects.toThrow(
      new NoServerAvailableError('No 4090 available; avoided 2 hosts after failed starts'),
    );
  });

  it('throws SoftTimeoutError past the soft deadline', async () => {
    const deps = setup();
    await expect(
      findServer(
        aState({
          timing: { poll_interval_seconds: 1, ready_timeout_seconds: 1, soft_deadline: Math.floor(NOW / 1000) - 1 },
        }),
        deps,
        NOW,
      ),
    ).rejects.toBeInstanceOf(SoftTimeoutError);
  });

  const priced = (id: number, spotUsd: number, patch: Parameters<typeof aServer>[1] = {}) =>
    aServer(id, {
      price: {
        on_demand: { [NATIVE]: 10 },
        spot: { [NATIVE]: 5 },
        usd_per_hour: { on_demand: { [NATIVE]: 1.2 }, spot: spotUsd },
      },
      ...patch,
    });

  it('leaves out servers below the reliability and rating floors, and the failure text counts them (issue 31 §1)', async () => {
    // Prepare: three unreliable servers, one rated too low, none left
    const deps = setup();
    deps.marketplace.servers = [
      aServer(1, { reliability: 0.9 }),
      aServer(2, { reliability: 0.95 }),
      aServer(3, { reliability: 0.5 }),
      aServer(4, { rating: { avg: 4.9, cnt: 0 } }),
    ];
    const state = aState();
    const request = {
      ...state.request,
      gpu_type: 'RTX 4090',
      max_price: 0.7,
      min_reliability: 0.99,
      min_rating: 4.5,
      min_rating_count: 1,
    };
    // Act
    const act = findServer({ ...state, request }, deps, NOW);
    // Assess
    await expect(act).rejects.toThrow(
      new NoServerAvailableError(
        'No RTX 4090 available under $0.7/hr with reliability >= 0.99 and rating >= 4.5 (3 servers left out by reliability, 1 by rating)',
      ),
    );
  });

  it('takes a server that passes the floors, and never one exclude_servers names', async () => {
    const deps = setup();
    deps.marketplace.servers = [aServer(1, { reliability: 0.9 }), aServer(2), aServer(3)];
    const state = aState();
    const result = await findServer(
      { ...state, request: { ...state.request, min_reliability: 0.99, exclude_servers: [2] } },
      deps,
      NOW,
    );
    expect(result.server.id).toBe(3);
  });

  it('prefer cheapest takes the lowest USD/h among all matches and says why', async () => {
    const deps = setup();
    deps.marketplace.servers = [priced(1, 0.6), priced(2, 0.31), priced(3, 0.45)];
    const state = aState();
    const result = await findServer({ ...state, request: { ...state.request, prefer: 'cheapest' } }, deps, NOW);
    expect(result.server.id).toBe(2);
    expect(result.chosen).toBe('cheapest of 3 matches at $0.31/h');
  });

  it('the chosen line shows the all-in price and the creation fee when the marketplace charges fees (issue 31 §6)', async () => {
    const deps = { ...setup(), fees: { renter_fee_percent: 5, creation_fee_usd: 0.1 } };
    deps.marketplace.servers = [priced(1, 0.6), priced(2, 0.31), priced(3, 0.45)];
    const state = aState();
    const result = await findServer({ ...state, request: { ...state.request, prefer: 'cheapest' } }, deps, NOW);
    expect(result.chosen).toBe('cheapest of 3 matches at $0.31/h ($0.33/h with the 5 % renter fee, + $0.10 per order)');
  });

  describe('max_price is what the caller pays at most (issue 38 §8)', () => {
    /** A server whose coin is worth $0.12/h a unit (10 a day on demand = $1.2/h) and whose spot is `spotUsd` in USD/h. */
    const atSpot = (id: number, spotUsd: number) =>
      aServer(id, {
        price: {
          on_demand: { [NATIVE]: 10 },
          spot: { [NATIVE]: spotUsd / 0.12 },
          usd_per_hour: { on_demand: { [NATIVE]: 1.2 }, spot: spotUsd },
        },
      });

    it('--max-price 0.25 --prefer cheapest on a $0.24/h server bids $0.25/h, not 1.1 × 0.24 = $0.264/h', async () => {
      // Prepare: the cheapest match lists $0.24/h; 1.1 × its spot price would be above the cap
      const deps = { ...setup(), fees: { renter_fee_percent: 5, creation_fee_usd: 0.1 } };
      deps.marketplace.servers = [atSpot(1, 0.3), atSpot(2, 0.24)];
      const state = aState();
      // Act
      const result = await findServer(
        { ...state, request: { ...state.request, max_price: 0.25, prefer: 'cheapest' } },
        deps,
        NOW,
      );
      // Assess: the bid in the coin is the cap converted at the server's rate (0.25 / 0.12), never above it
      expect(result.server.id).toBe(2);
      expect(result.server.spot_bid).toBeLessThanOrEqual(0.25 / 0.12);
      expect(result.server.spot_bid).toBeCloseTo(0.25 / 0.12, 8);
      expect(result.server.spot_bid).toBeGreaterThan(2);
      // What is reserved and shown is the same bid in USD: $0.25/h, and $0.2625/h with the 5 % renter fee
      expect(result.server.usd_per_hour).toBe(0.25);
      expect(result.server.all_in_usd_per_hour).toBe(0.2625);
    });

    it('keeps 1.1 × spot when that is under the cap, and never bids below the listed spot price', async () => {
      const deps = setup();
      deps.marketplace.servers = [atSpot(1, 0.2)];
      const state = aState();
      const under = await findServer({ ...state, request: { ...state.request, max_price: 0.25 } }, deps, NOW);
      expect(under.server.spot_bid).toBeCloseTo(0.22 / 0.12, 8);
      expect(under.server.usd_per_hour).toBeCloseTo(0.22, 6);
      expect(under.server.all_in_usd_per_hour).toBeUndefined();

      // A cap equal to the spot price: the bid is the spot price itself
      deps.claims.holders.clear();
      deps.tasks.seed('task-2');
      const atCap = await findServer(
        { ...state, task_id: 'task-2', request: { ...state.request, max_price: 0.2 } },
        deps,
        NOW,
      );
      expect(atCap.server.spot_bid).toBeCloseTo(0.2 / 0.12, 8);
      expect(atCap.server.usd_per_hour).toBeLessThanOrEqual(0.2);
    });
  });

  it('prefer reliable takes the highest reliability, then rating, then price', async () => {
    const deps = setup();
    deps.marketplace.servers = [
      priced(1, 0.3, { reliability: 0.97 }),
      priced(2, 0.6, { reliability: 0.999, rating: { avg: 4.5, cnt: 9 } }),
      priced(3, 0.5, { reliability: 0.999, rating: { avg: 4.9, cnt: 9 } }),
      priced(4, 0.4, { reliability: 0.999, rating: { avg: 4.9, cnt: 2 } }),
    ];
    const state = aState();
    const result = await findServer({ ...state, request: { ...state.request, prefer: 'reliable' } }, deps, NOW);
    expect(result.server.id).toBe(4);
  });
});
