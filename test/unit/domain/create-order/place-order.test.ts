import { placeOrder } from '../../../../lambdas/domain/create-order/place-order';
import { MAX_PLACEMENT_ATTEMPTS, type SearchResult } from '../../../../lambdas/domain/create-order/workflow-state';
import { MarketplaceRejectedError, MarketplaceUnavailableError, OrderOutcomeUnknownError } from '../../../../lambdas/domain/errors';
import { aPlacedOrder, aState, NATIVE } from '../../../fakes/builders';
import { FakeClaims } from '../../../fakes/claims';
import { FakeMarketplace } from '../../../fakes/marketplace';
import { FakeTasks } from '../../../fakes/tasks';

const NOW = 1_000_000;
const search = (id = 1, attempt = 1, excluded: number[] = []): SearchResult => ({
  server: { id, gpu_array: ['NVIDIA RTX 4090'], price_usd: 0.6, spot_bid: 5.5 }, attempt, excluded,
});

describe('Function: placeOrder', () => {
  const setup = () => {
    const marketplace = new FakeMarketplace();
    const tasks = new FakeTasks();
    const claims = new FakeClaims();
    tasks.seed();
    claims.holders.set(1, 'task-1');
    return { marketplace, tasks, claims };
  };

  it('places a spot order with the bid and records it on the task', async () => {
    // Prepare
    const deps = setup();
    // Act
    const { placement, placedNow } = await placeOrder(aState({ search: search() }), deps, NOW);
    // Assess
    expect(placedNow).toBe(true);
    expect(placement).toEqual({ retry: false, order_id: 100, server_id: 1, placed_at: NOW });
    expect(deps.marketplace.created).toEqual([{ renting_server: 1, type: 'spot', currency: NATIVE, image: 'img', ports: { '22': 'tcp' }, spotprice: 5.5 }]);
    expect(deps.tasks.records.get('task-1')).toMatchObject({ order_id: 100, server_id: 1, order_intent_at: NOW });
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
    deps.marketplace.createOutcomes = [async () => {
      deps.marketplace.orders.push(aPlacedOrder(9, 1, Math.floor(NOW / 1000)));
      return { order_id: undefined };
    }];
    const { placement } = await placeOrder(aState({ search: search() }), deps, NOW);
    expect(placement).toMatchObject({ order_id: 9 });
    expect(deps.tasks.records.get('task-1')?.order_id).toBe(9);
  });

  it('ignores older orders on the same server when reconciling', async () => {
    const deps = setup();
    deps.marketplace.orders = [aPlacedOrder(8, 1, Math.floor(NOW / 1000) - 3600)];
    deps.marketplace.createOutcomes = [async () => ({ order_id: undefined })];
    await expect(placeOrder(aState({ search: search() }), deps, NOW)).rejects.toBeInstanceOf(OrderOutcomeUnknownError);
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
    other.marketplace.createOutcomes = [async () => { throw new OrderOutcomeUnknownError('reset'); }];
    await expect(placeOrder(aState({ search: search() }), other, NOW)).rejects.toBeInstanceOf(OrderOutcomeUnknownError);
  });

  it('asks for a new search and releases the claim when the server is already rented', async () => {
    const deps = setup();
    deps.marketplace.createOutcomes = [async () => { throw new MarketplaceRejectedError('server-already-rented'); }];
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
    deps.marketplace.createOutcomes = [async () => { throw new MarketplaceRejectedError('server-already-rented'); }];
    // Act
    const { placement, placedNow } = await placeOrder(aState({ search: search() }), deps, NOW);
    // Assess: the task keeps its own order instead of searching again and leaving it running
    expect(placement).toMatchObject({ retry: false, order_id: 31, server_id: 1 });
    expect(placedNow).toBe(false);
    expect(deps.claims.holders.get(1)).toBe('task-1');
  });

  it('gives up after the last attempt', async () => {
    const deps = setup();
    deps.marketplace.createOutcomes = [async () => { throw new MarketplaceRejectedError('server-offline'); }];
    await expect(placeOrder(aState({ search: search(1, MAX_PLACEMENT_ATTEMPTS) }), deps, NOW)).rejects.toThrow('server-offline');
  });

  it('propagates other rejections and transient errors', async () => {
    const deps = setup();
    deps.marketplace.createOutcomes = [
      async () => { throw new MarketplaceRejectedError('not_enough_balance'); },
      async () => { throw new MarketplaceUnavailableError('HTTP 500'); },
    ];
    await expect(placeOrder(aState({ search: search() }), deps, NOW)).rejects.toThrow('not_enough_balance');
    await expect(placeOrder(aState({ search: search() }), deps, NOW)).rejects.toBeInstanceOf(MarketplaceUnavailableError);
  });
});
