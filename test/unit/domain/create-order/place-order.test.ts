import { placeOrder, type PlaceOrderDeps } from '../../../../lambdas/domain/create-order/place-order';
import { MAX_PLACEMENT_ATTEMPTS, type SearchResult } from '../../../../lambdas/domain/create-order/workflow-state';
import {
  MarketplaceDatabaseError,
  MarketplaceRejectedError,
  MarketplaceUnavailableError,
  NoServerAvailableError,
  OrderNotVisibleError,
  OrderOutcomeUnknownError,
} from '../../../../lambdas/domain/errors';
import { FakePlacementIntents } from '../../../fakes/placement-intents';
import { aPlacedOrder, aState, NATIVE } from '../../../fakes/builders';
import { FakeClaims } from '../../../fakes/claims';
import { FakeMarketplace } from '../../../fakes/marketplace';
import { FakeTasks } from '../../../fakes/tasks';

const NOW = 1_000_000;
const search = (id = 1, attempt = 1, excluded: number[] = [], tried?: SearchResult['tried']): SearchResult => ({
  server: { id, gpu_array: ['NVIDIA RTX 4090'], price_usd: 0.6, spot_bid: 5.5 },
  attempt,
  excluded,
  ...(tried ? { tried } : {}),
});
const VISIBLE_MS = 60_000;

describe('Function: placeOrder', () => {
  const setup = () => {
    const marketplace = new FakeMarketplace();
    const tasks = new FakeTasks();
    const claims = new FakeClaims();
    const intents = new FakePlacementIntents();
    tasks.seed();
    claims.holders.set(1, 'task-1');
    // A virtual clock that only the visibility wait's sleeps move.
    const time = { now: NOW, slept: [] as number[] };
    const deps = {
      marketplace,
      tasks,
      claims,
      intents,
      time,
      visibleTimeoutMs: VISIBLE_MS,
      clock: () => time.now,
      sleep: async (ms: number) => {
        time.slept.push(ms);
        time.now += ms;
      },
    } satisfies PlaceOrderDeps & Record<string, unknown>;
    return deps;
  };

  it('places a spot order with the bid and records it on the task', async () => {
    // Prepare
    const deps = setup();
    // Act
    const { placement, placedNow } = await placeOrder(aState({ search: search() }), deps, NOW);
    // Assess
    expect(placedNow).toBe(true);
    expect(placement).toEqual({ retry: false, order_id: 100, server_id: 1, placed_at: NOW });
    expect(deps.marketplace.created).toEqual([
      { renting_server: 1, type: 'spot', currency: NATIVE, image: 'img', ports: { '22': 'tcp' }, spotprice: 5.5 },
    ]);
    expect(deps.tasks.records.get('task-1')).toMatchObject({ order_id: 100, server_id: 1, order_intent_at: NOW });
  });

  it("sends the relay's own password when the caller gave none and names the secret version in the placement, never the password", async () => {
    // Prepare
    const deps = {
      ...setup(),
      sshPassword: async (taskId: string) => ({ password: `Own${taskId.replace('-', '')}Pw`, key_id: 'a1b2c3d4e5f6' }),
    };
    // Act
    const { placement } = await placeOrder(aState({ search: search() }), deps, NOW);
    // Assess
    expect(deps.marketplace.created[0]).toMatchObject({ ssh_password: 'Owntask1Pw' });
    expect(placement).toEqual({
      retry: false,
      order_id: 100,
      server_id: 1,
      placed_at: NOW,
      password_key: 'a1b2c3d4e5f6',
    });
    expect(JSON.stringify(placement)).not.toContain('Owntask1Pw');
  });

  it("names the relay's secret version for an order an earlier attempt placed, and none for the caller's own password", async () => {
    // Prepare
    const own = async () => ({ password: 'OwnPw', key_id: 'a1b2c3d4e5f6' });
    const retried = { ...setup(), sshPassword: own };
    retried.tasks.seed('task-1', { order_id: 77, server_id: 1, order_intent_at: NOW - 5000 });
    const callers = {
      ...setup(),
      sshPassword: own,
      access: { orderAccess: async () => ({ ssh_password: 'CallerPw' }) },
    };
    // Act
    const earlier = await placeOrder(aState({ search: search() }), retried, NOW);
    const given = await placeOrder(aState({ search: search() }), callers, NOW);
    // Assess
    expect(earlier.placement).toMatchObject({ order_id: 77, password_key: 'a1b2c3d4e5f6' });
    expect(callers.marketplace.created[0]).toMatchObject({ ssh_password: 'CallerPw' });
    expect(given.placement).not.toHaveProperty('password_key');
  });

  it('places an on-demand order without spotprice', async () => {
    const deps = setup();
    const state = aState({ search: search() });
    await placeOrder({ ...state, request: { ...state.request, use_spot: false } }, deps, NOW);
    expect(deps.marketplace.created[0]).not.toHaveProperty('spotprice');
    expect(deps.marketplace.created[0].type).toBe('on-demand');
  });

  it('never places a second order when the task already has one', async () => {
    const deps = setup();
    deps.tasks.seed('task-1', { order_id: 77, server_id: 1, order_intent_at: NOW - 5000 });
    const { placement, placedNow } = await placeOrder(aState({ search: search() }), deps, NOW);
    expect(placedNow).toBe(false);
    expect(placement).toMatchObject({ order_id: 77 });
    expect(deps.marketplace.created).toHaveLength(0);
  });

  it('reconciles an earlier attempt through my_orders instead of placing again', async () => {
    const deps = setup();
    deps.tasks.seed('task-1', { server_id: 1, order_intent_at: NOW - 2000 });
    deps.marketplace.orders = [aPlacedOrder(55, 1, Math.floor(NOW / 1000) - 1)];
    const { placement } = await placeOrder(aState({ search: search() }), deps, NOW);
    expect(placement).toMatchObject({ retry: false, order_id: 55 });
    expect(deps.marketplace.created).toHaveLength(0);
  });

  it('finds the order in my_orders when create_order answers without order_id', async () => {
    const deps = setup();
    deps.marketplace.createOutcomes = [
      async () => {
        deps.marketplace.orders.push(aPlacedOrder(9, 1, Math.floor(NOW / 1000)));
        return { order_id: undefined };
      },
    ];
    const { placement } = await placeOrder(aState({ search: search() }), deps, NOW);
    expect(placement).toMatchObject({ order_id: 9 });
    expect(deps.tasks.records.get('task-1')?.order_id).toBe(9);
  });

  it('ignores older orders on the same server when reconciling', async () => {
    const deps = setup();
    deps.marketplace.orders = [aPlacedOrder(8, 1, Math.floor(NOW / 1000) - 3600)];
    deps.marketplace.createOutcomes = [async () => ({ order_id: undefined })];
    await expect(placeOrder(aState({ search: search() }), deps, NOW)).rejects.toBeInstanceOf(OrderNotVisibleError);
  });

  it('keeps reading my_orders with backoff until a code-0 order shows up late, and keeps it', async () => {
    // Prepare: production lists the new order ~20 s after create_order answered {"code":0}.
    const deps = setup();
    const listOrders = deps.marketplace.listOrders.bind(deps.marketplace);
    deps.marketplace.listOrders = async (options) => {
      if (deps.time.now >= NOW + 20_000 && deps.marketplace.orders.length === 0)
        deps.marketplace.orders.push(aPlacedOrder(41, 1, Math.floor(NOW / 1000)));
      return listOrders(options);
    };
    deps.marketplace.createOutcomes = [async () => ({ order_id: undefined })];
    // Act
    const { placement, placedNow } = await placeOrder(aState({ search: search() }), deps, NOW);
    // Assess: found after 1 + 2 + 4 + 8 + 8 s of backoff, fresh reads only, kept under the task's name
    expect(placement).toMatchObject({ retry: false, order_id: 41, placed_at: NOW });
    expect(placedNow).toBe(true);
    expect(deps.time.slept).toEqual([1000, 2000, 4000, 8000, 8000]);
    expect(deps.marketplace.listOrdersOptions.every((o) => o?.returnCompleted === true)).toBe(true);
    expect(deps.intents.owners.get(41)).toBe('task:task-1');
    expect(await deps.intents.list()).toEqual([]);
    expect(deps.marketplace.created).toHaveLength(1);
  });

  it('fails without placing again when a code-0 order never shows within the window, leaving the intent to the fleet watch', async () => {
    const deps = setup();
    deps.marketplace.createOutcomes = [async () => ({ order_id: undefined })];
    await expect(placeOrder(aState({ search: search() }), deps, NOW)).rejects.toThrow(
      /accepted but the order did not appear in my_orders within 60 s/,
    );
    expect(deps.time.now).toBe(NOW + VISIBLE_MS);
    expect(await deps.intents.list()).toEqual([{ task_id: 'task-1', server_id: 1, at: NOW }]);
    expect(deps.marketplace.created).toHaveLength(1);
  });

  it('does not keep an order the fleet watch already claimed as an orphan', async () => {
    const deps = setup();
    deps.marketplace.createOutcomes = [
      async () => {
        deps.marketplace.orders.push(aPlacedOrder(43, 1, Math.floor(NOW / 1000)));
        return { order_id: undefined };
      },
    ];
    deps.intents.owners.set(43, 'orphan');
    await expect(placeOrder(aState({ search: search() }), deps, NOW)).rejects.toBeInstanceOf(OrderNotVisibleError);
    expect(deps.tasks.records.get('task-1')?.order_id).toBeUndefined();
  });

  it('waits out the window of an earlier intent before placing again (a retry after a lost answer)', async () => {
    // Prepare: attempt 1 sent create_order 10 s ago and lost the answer; the order shows 25 s after it.
    const deps = setup();
    const intentAt = NOW - 10_000;
    deps.tasks.seed('task-1', { server_id: 1, order_intent_at: intentAt });
    const listOrders = deps.marketplace.listOrders.bind(deps.marketplace);
    deps.marketplace.listOrders = async (options) => {
      if (deps.time.now >= intentAt + 25_000 && deps.marketplace.orders.length === 0)
        deps.marketplace.orders.push(aPlacedOrder(44, 1, Math.floor(intentAt / 1000)));
      return listOrders(options);
    };
    // Act
    const { placement, placedNow } = await placeOrder(aState({ search: search() }), deps, NOW);
    // Assess: no second create_order
    expect(placement).toMatchObject({ order_id: 44, placed_at: intentAt });
    expect(placedNow).toBe(false);
    expect(deps.marketplace.created).toHaveLength(0);
  });

  it('reconciles an unknown outcome and rethrows when no order shows up', async () => {
    const deps = setup();
    deps.marketplace.createOutcomes = [
      async () => {
        deps.marketplace.orders.push(aPlacedOrder(12, 1, Math.floor(NOW / 1000)));
        throw new OrderOutcomeUnknownError('timeout after send');
      },
    ];
    expect((await placeOrder(aState({ search: search() }), deps, NOW)).placement).toMatchObject({ order_id: 12 });

    const other = setup();
    other.marketplace.createOutcomes = [
      async () => {
        throw new OrderOutcomeUnknownError('reset');
      },
    ];
    await expect(placeOrder(aState({ search: search() }), other, NOW)).rejects.toBeInstanceOf(OrderOutcomeUnknownError);
  });

  it('asks for a new search and releases the claim when the server is already rented', async () => {
    const deps = setup();
    deps.marketplace.createOutcomes = [
      async () => {
        throw new MarketplaceRejectedError('server-already-rented');
      },
    ];
    const { placement } = await placeOrder(aState({ search: search() }), deps, NOW);
    expect(placement).toEqual({ retry: true, server_id: 1, reason: 'server-already-rented' });
    expect(deps.claims.holders.has(1)).toBe(false);
  });

  it('takes "already rented" as ours when an earlier create with an unknown outcome landed late', async () => {
    // Prepare: attempt 1 timed out and its reconcile saw nothing; the order shows up only now.
    const deps = setup();
    deps.tasks.seed('task-1', { server_id: 1, order_intent_at: NOW - 4000 });
    let reads = 0;
    const listOrders = deps.marketplace.listOrders.bind(deps.marketplace);
    deps.marketplace.listOrders = async () => {
      reads += 1;
      // The first reconcile (before placing again) sees nothing; the late order exists after that.
      if (reads === 2) deps.marketplace.orders.push(aPlacedOrder(31, 1, Math.floor((NOW - 4000) / 1000)));
      return reads === 1 ? [] : listOrders();
    };
    deps.marketplace.createOutcomes = [
      async () => {
        throw new MarketplaceRejectedError('server-already-rented');
      },
    ];
    // Act
    const { placement, placedNow } = await placeOrder(aState({ search: search() }), deps, NOW);
    // Assess: the task keeps its own order instead of searching again and leaving it running
    expect(placement).toMatchObject({ retry: false, order_id: 31, server_id: 1 });
    expect(placedNow).toBe(false);
    expect(deps.claims.holders.get(1)).toBe('task-1');
  });

  it.each(['server-already-rented', 'server-offline', 'currency-not-allowed'])(
    'moves on to the next host after %s',
    async (reason) => {
      const deps = setup();
      deps.marketplace.createOutcomes = [
        async () => {
          throw new MarketplaceRejectedError(reason);
        },
      ];
      const { placement } = await placeOrder(aState({ search: search() }), deps, NOW);
      expect(placement).toEqual({ retry: true, server_id: 1, reason });
      // A refusal placed nothing: no intent is left for the fleet watch.
      expect(await deps.intents.list()).toEqual([]);
    },
  );

  it('gives up after the last attempt, naming every server tried and why', async () => {
    const deps = setup();
    deps.marketplace.createOutcomes = [
      async () => {
        throw new MarketplaceRejectedError('server-offline');
      },
    ];
    const tried = [
      { server_id: 7, reason: 'currency-not-allowed' },
      { server_id: 9, reason: 'server-already-rented' },
    ];
    const attempt = placeOrder(aState({ search: search(1, MAX_PLACEMENT_ATTEMPTS, [7, 9], tried) }), deps, NOW);
    await expect(attempt).rejects.toBeInstanceOf(NoServerAvailableError);
    await expect(attempt).rejects.toThrow(
      'No 4090 available; tried server 7 (currency-not-allowed), server 9 (server-already-rented), server 1 (server-offline)',
    );
    expect(deps.claims.holders.has(1)).toBe(false);
  });

  it('propagates other rejections and transient errors', async () => {
    const deps = setup();
    deps.marketplace.createOutcomes = [
      async () => {
        throw new MarketplaceRejectedError('not_enough_balance');
      },
      async () => {
        throw new MarketplaceUnavailableError('HTTP 500');
      },
    ];
    await expect(placeOrder(aState({ search: search() }), deps, NOW)).rejects.toThrow('not_enough_balance');
    await expect(placeOrder(aState({ search: search() }), deps, NOW)).rejects.toBeInstanceOf(
      MarketplaceUnavailableError,
    );
  });

  it('takes a create answered with code 1 as a refusal: the retry places again at once, with no visibility wait', async () => {
    // Prepare: the first create_order is refused with a database error (code 1).
    const deps = setup();
    deps.marketplace.createOutcomes = [
      async () => {
        throw new MarketplaceDatabaseError();
      },
    ];
    // Act: the attempt fails (the step's Retry runs it again), and the retry places the order.
    await expect(placeOrder(aState({ search: search() }), deps, NOW)).rejects.toBeInstanceOf(MarketplaceDatabaseError);
    const openAfterRefusal = deps.intents.open_.size;
    const { placement, placedNow } = await placeOrder(aState({ search: search() }), deps, NOW + 2_000);
    // Assess: one order, no my_orders read, no sleep, and the refused intent closed at once.
    expect(placedNow).toBe(true);
    expect(placement).toMatchObject({ retry: false, order_id: 100 });
    expect(deps.marketplace.created).toHaveLength(2); // both sends: the refused one and the placed one
    expect(deps.marketplace.listCalls).toBe(0);
    expect(deps.time.slept).toEqual([]);
    expect(openAfterRefusal).toBe(0);
  });

  it('still waits for the order after an unknown outcome (a 5xx without a result code)', async () => {
    // Prepare: the first create's outcome is unknown; the retry must reconcile before placing again.
    const deps = setup();
    deps.marketplace.createOutcomes = [
      async () => {
        throw new OrderOutcomeUnknownError('HTTP 502 without a result code');
      },
    ];
    await expect(placeOrder(aState({ search: search() }), deps, NOW)).rejects.toBeInstanceOf(OrderOutcomeUnknownError);
    // Act
    await placeOrder(aState({ search: search() }), deps, NOW + 2_000);
    // Assess: the retry read my_orders until the intent's window ended before it placed again.
    expect(deps.time.slept.length).toBeGreaterThan(0);
    expect(deps.time.now).toBeGreaterThanOrEqual(NOW + VISIBLE_MS);
    expect(deps.marketplace.created).toHaveLength(2);
  });
});
