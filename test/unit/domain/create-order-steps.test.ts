import {
  cancelTaskOrder, checkOrder, findServer, handleExecutionEnded, placeOrder, reportResult, reserveQuota,
  workflowResult, MAX_PLACEMENT_ATTEMPTS, type SearchResult,
} from '../../../lambdas/domain/create-order-steps';
import {
  MarketplaceRejectedError, MarketplaceUnavailableError, NoServerAvailableError, OrderOutcomeUnknownError, QuotaExceededError, SoftTimeoutError,
} from '../../../lambdas/domain/errors';
import { orderReadyText } from '../../../lambdas/domain/chat-messages';
import { aPlacedOrder, aServer, aState, NATIVE } from '../../fakes/builders';
import { FakeClaims } from '../../fakes/claims';
import { FakeLeaseStore } from '../../fakes/lease-store';
import { FakeMarketplace } from '../../fakes/marketplace';
import { FakeNotifier } from '../../fakes/notifier';
import { FakeSlidingWindow } from '../../fakes/sliding-window';
import { FakeTasks } from '../../fakes/tasks';

const NOW = 1_000_000;
const search = (id = 1, attempt = 1, excluded: number[] = []): SearchResult => ({
  server: { id, gpu_array: ['NVIDIA RTX 4090'], price_usd: 0.6, spot_bid: 5.5 }, attempt, excluded,
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
    expect(result).toEqual({ server: { id: 2, gpu_array: ['NVIDIA RTX 4090'], price_usd: 0.6, spot_bid: 5.5 }, attempt: 1, excluded: [] });
    expect(deps.claims.holders.get(2)).toBe('task-1');
    expect(deps.tasks.records.get('task-1')?.state).toBe('running');
  });

  it('skips servers whose maximum rental time (mrl, hours) is below the lease; without a lease any mrl fits', async () => {
    // Prepare: server 1 may be rented 24 h, server 2 for 48 h
    const deps = setup();
    deps.marketplace.servers = [aServer(1, { mrl: 24 }), aServer(2, { mrl: 48 })];
    const leased = aState({ request: { ...aState().request, max_hours: 30 } });
    // Act + Assess
    expect((await findServer(leased, deps, NOW)).server.id).toBe(2);
    deps.claims.holders.clear();
    expect((await findServer(aState({ request: { ...aState().request, max_hours: 24 } }), deps, NOW)).server.id).toBe(1);
    deps.claims.holders.clear();
    expect((await findServer(aState(), deps, NOW)).server.id).toBe(1);
    deps.claims.holders.clear();
    await expect(findServer(aState({ request: { ...aState().request, max_hours: 49 } }), deps, NOW)).rejects.toMatchObject({ name: 'NoServerAvailableError' });
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
    const state = aState({ search: search(1, 1), placement: { retry: true, server_id: 1, reason: 'server-already-rented' } });
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
    deps.marketplace.servers = [aServer(1, { price: { on_demand: {}, spot: { [NATIVE]: 5 }, usd: { on_demand: {}, spot: 3 } } })];
    const state = aState();
    const act = findServer({ ...state, request: { ...state.request, max_price: 2 } }, deps, NOW);
    await expect(act).rejects.toThrow(new NoServerAvailableError('No 4090 available under $2/hr'));
  });

  it('throws SoftTimeoutError past the soft deadline', async () => {
    const deps = setup();
    await expect(findServer(aState({ timing: { poll_interval_seconds: 1, ready_timeout_seconds: 1, soft_deadline: Math.floor(NOW / 1000) - 1 } }), deps, NOW))
      .rejects.toBeInstanceOf(SoftTimeoutError);
  });
});

describe('Function: reserveQuota', () => {
  it('counts the task once and refuses past the limit', async () => {
    // Prepare
    const quota = new FakeSlidingWindow();
    const opts = { now: NOW, limit: 2, key: 'QUOTA#orders' };
    // Act
    await reserveQuota(aState({ task_id: 'a' }), { quota }, opts);
    const again = await reserveQuota(aState({ task_id: 'a' }), { quota }, opts);
    await reserveQuota(aState({ task_id: 'b' }), { quota }, opts);
    // Assess
    expect(again.count).toBe(1);
    await expect(reserveQuota(aState({ task_id: 'c' }), { quota }, opts)).rejects.toThrow(new QuotaExceededError(2));
    await expect(reserveQuota(aState({ task_id: 'c' }), { quota }, opts)).rejects.toThrow('Hourly order limit reached (2 per hour)');
  });
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

describe('Function: checkOrder', () => {
  const placed = { retry: false as const, order_id: 5, server_id: 1, placed_at: NOW };

  it('is ready when the order runs', async () => {
    const marketplace = new FakeMarketplace();
    marketplace.orders = [aPlacedOrder(5, 1, 1, 'running')];
    const result = await checkOrder(aState({ placement: placed }), { marketplace }, NOW + 1000);
    // ready_at: when the poll saw it running (a lease counts from here).
    expect(result).toEqual({ ready: true, timedOut: false, order: { order_id: 5, status: 'running', ssh_connection: 'ssh -p 2222 root@host5' }, ready_at: NOW + 1000 });
  });

  it('waits within the readiness window and times out after it', async () => {
    const marketplace = new FakeMarketplace();
    marketplace.orders = [aPlacedOrder(5, 1, 1, 'creating_order')];
    const state = aState({ placement: placed });
    expect(await checkOrder(state, { marketplace }, NOW + 120_000)).toMatchObject({ ready: false, timedOut: false });
    expect(await checkOrder(state, { marketplace }, NOW + 120_001)).toMatchObject({ ready: false, timedOut: true, reason: 'ready_timeout' });
  });

  it('times out at the soft deadline', async () => {
    const marketplace = new FakeMarketplace();
    const state = aState({ placement: placed, timing: { poll_interval_seconds: 1, ready_timeout_seconds: 120, soft_deadline: NOW / 1000 + 10 } });
    expect(await checkOrder(state, { marketplace }, NOW + 10_000)).toMatchObject({ timedOut: false });
    expect(await checkOrder(state, { marketplace }, NOW + 10_001)).toMatchObject({ timedOut: true, reason: 'soft_deadline' });
  });
});

describe('Function: cancelTaskOrder', () => {
  it('cancels the recorded order and marks it', async () => {
    const marketplace = new FakeMarketplace();
    const tasks = new FakeTasks();
    tasks.seed('task-1', { order_id: 7 });
    expect(await cancelTaskOrder('task-1', undefined, { marketplace, tasks }, NOW)).toEqual({ cancelled: true, order_id: 7 });
    expect(marketplace.cancelled).toEqual([7]);
    expect(tasks.records.get('task-1')?.order_cancelled).toBe(true);
    // A second call does not cancel again.
    expect(await cancelTaskOrder('task-1', undefined, { marketplace, tasks }, NOW)).toMatchObject({ cancelled: false, note: 'already_cancelled' });
  });

  it('does nothing without an order', async () => {
    const tasks = new FakeTasks();
    tasks.seed();
    const marketplace = new FakeMarketplace();
    expect(await cancelTaskOrder('task-1', undefined, { marketplace, tasks }, NOW)).toEqual({ cancelled: false, note: 'no_order' });
  });

  it('treats a rejection as nothing left to cancel and rethrows transient errors', async () => {
    const tasks = new FakeTasks();
    tasks.seed();
    const marketplace = new FakeMarketplace();
    marketplace.cancelError = new MarketplaceRejectedError('order-not-found');
    expect(await cancelTaskOrder('task-1', 3, { marketplace, tasks }, NOW)).toMatchObject({ cancelled: false, note: 'not_cancellable' });
    marketplace.cancelError = new MarketplaceUnavailableError('down');
    await expect(cancelTaskOrder('task-2', 3, { marketplace, tasks }, NOW)).rejects.toBeInstanceOf(MarketplaceUnavailableError);
  });
});

describe('Function: workflowResult', () => {

  it('reports the configured readiness timeout', () => {
    const state = aState({ timing: { poll_interval_seconds: 1, ready_timeout_seconds: 42, soft_deadline: 0 }, check: { ready: false, timedOut: true, reason: 'ready_timeout' } });
    expect(workflowResult(state)).toEqual({ success: false, error: 'Order creation timed out after 42 s' });
  });

  it('builds the success result from the chosen server and the order', () => {
    const state = aState({ search: search(4), check: { ready: true, timedOut: false, order: { order_id: 9, status: 'running', ssh_connection: 'ssh x' } } });
    expect(workflowResult(state)).toEqual({ success: true, order_id: 9, server_id: 4, status: 'running', ssh_connection: 'ssh x', gpu: ['NVIDIA RTX 4090'], price_usd: 0.6 });
  });
});

describe('Function: reportResult', () => {
  const ready = aState({ search: search(4), check: { ready: true, timedOut: false, order: { order_id: 9, status: 'running', ssh_connection: 'ssh x' } } });

  it('delivers once, announces the ready order in chat and releases the claim', async () => {
    // Prepare
    const tasks = new FakeTasks();
    tasks.seed();
    const notifier = new FakeNotifier();
    const claims = new FakeClaims();
    claims.holders.set(4, 'task-1');
    // Act
    const leases = new FakeLeaseStore();
    const first = await reportResult(ready, { tasks, notifier, claims, leases }, NOW);
    const second = await reportResult(ready, { tasks, notifier, claims, leases }, NOW);
    // Assess
    expect(first).toMatchObject({ success: true, delivered: true });
    expect(second.delivered).toBe(false);
    expect(notifier.callbacks).toHaveLength(1);
    expect(notifier.callbacks[0]).toMatchObject({ url: 'http://cb.example/hook', result: { success: true, order_id: 9 } });
    expect(notifier.chats).toEqual([orderReadyText({ order_id: 9, gpu: ['NVIDIA RTX 4090'], ssh_connection: 'ssh x' })]);
    expect(notifier.chats[0]).toContain('ssh x');
    expect(claims.holders.has(4)).toBe(false);
    expect(tasks.records.get('task-1')?.state).toBe('succeeded');
  });

  it('does not announce failures in chat', async () => {
    const tasks = new FakeTasks();
    tasks.seed();
    const notifier = new FakeNotifier();
    const leases = new FakeLeaseStore();
    await reportResult(aState({ error: { name: 'QuotaExceededError', message: 'Hourly order limit reached (10 per hour)' } }), { tasks, notifier, claims: new FakeClaims(), leases }, NOW);
    expect(notifier.chats).toHaveLength(0);
    expect(notifier.callbacks[0].result).toEqual({ success: false, error: 'Hourly order limit reached (10 per hour)' });
    expect(leases.orders.size).toBe(0);
  });

  it('records a ready order without a lease for the watch, and the result has no lease_expires_at', async () => {
    const tasks = new FakeTasks();
    tasks.seed();
    const leases = new FakeLeaseStore();
    const { result } = await reportResult(ready, { tasks, notifier: new FakeNotifier(), claims: new FakeClaims(), leases }, NOW);
    expect(result).not.toHaveProperty('lease_expires_at');
    expect(await leases.get(9)).toEqual({ order_id: 9, task_id: 'task-1', callback_url: 'http://cb.example/hook', spot: true });
    expect((await leases.watched()).get(9)).toMatchObject({ status: 'running' });
  });

  it('records a leased order with its end counted from readiness, and adds lease_expires_at to the result', async () => {
    // Prepare: ready at 5 000 000 ms (5 000 s), a 1.5 h lease; the report runs later
    const tasks = new FakeTasks();
    tasks.seed();
    const leases = new FakeLeaseStore();
    const notifier = new FakeNotifier();
    const leased = aState({
      request: { ...aState().request, max_hours: 1.5 },
      search: search(4),
      check: { ready: true, timedOut: false, order: { order_id: 9, status: 'running', ssh_connection: 'ssh x' }, ready_at: 5_000_000 },
    });
    // Act
    const { result } = await reportResult(leased, { tasks, notifier, claims: new FakeClaims(), leases }, 7_000_000);
    // Assess
    expect(result).toMatchObject({ success: true, order_id: 9, lease_expires_at: 5_000 + 5_400 });
    expect(notifier.callbacks[0].result).toMatchObject({ lease_expires_at: 10_400 });
    expect(await leases.get(9)).toMatchObject({ order_id: 9, task_id: 'task-1', expires_at: 10_400, hours: 1.5 });
  });

  it('fails (for the state machine to retry) without a final result when the order cannot be recorded', async () => {
    // Prepare
    const tasks = new FakeTasks();
    tasks.seed();
    const notifier = new FakeNotifier();
    const leases = { track: jest.fn().mockRejectedValueOnce(new Error('ProvisionedThroughputExceededException')).mockResolvedValue(undefined) };
    // Act + Assess: the first attempt fails before any result is written or delivered
    await expect(reportResult(ready, { tasks, notifier, claims: new FakeClaims(), leases }, NOW)).rejects.toThrow('ProvisionedThroughputExceededException');
    expect(tasks.records.get('task-1')?.state).not.toBe('succeeded');
    expect(notifier.callbacks).toHaveLength(0);
    // The retried step records it and delivers the one result
    await expect(reportResult(ready, { tasks, notifier, claims: new FakeClaims(), leases }, NOW)).resolves.toMatchObject({ success: true, delivered: true });
    expect(leases.track).toHaveBeenCalledTimes(2);
    expect(notifier.callbacks).toHaveLength(1);
  });
});

describe('Function: handleExecutionEnded', () => {
  const deps = () => {
    const tasks = new FakeTasks();
    return { tasks, notifier: new FakeNotifier(), claims: new FakeClaims(), marketplace: new FakeMarketplace() };
  };

  it('leaves a finished task alone', async () => {
    const d = deps();
    d.tasks.seed('task-1', { state: 'succeeded', order_id: 3 });
    expect(await handleExecutionEnded({ taskId: 'task-1', status: 'TIMED_OUT' }, d, { now: NOW, hardLimitSeconds: 600 })).toEqual({ action: 'none' });
    expect(d.marketplace.cancelled).toHaveLength(0);
  });

  it('cancels the dangling order and fails the task', async () => {
    const d = deps();
    d.tasks.seed('task-1', { state: 'running', order_id: 3, server_id: 4, request: { callback_url: 'http://cb/x' } });
    d.claims.holders.set(4, 'task-1');
    const outcome = await handleExecutionEnded({ taskId: 'task-1', status: 'TIMED_OUT' }, d, { now: NOW, hardLimitSeconds: 600 });
    expect(outcome).toMatchObject({ action: 'completed', delivered: true, cancel: { cancelled: true, order_id: 3 } });
    expect(d.marketplace.cancelled).toEqual([3]);
    expect(d.notifier.callbacks[0]).toMatchObject({ url: 'http://cb/x', result: { success: false, error: 'Task timed out after 600 s (hard limit)' } });
    expect(d.claims.holders.has(4)).toBe(false);
  });

  it('still ends the task when the cancel fails', async () => {
    const d = deps();
    d.tasks.seed('task-1', { state: 'running', order_id: 3 });
    d.marketplace.cancelError = new MarketplaceUnavailableError('down');
    const errors: unknown[] = [];
    await handleExecutionEnded({ taskId: 'task-1', status: 'ABORTED' }, d, { now: NOW, hardLimitSeconds: 600, onCancelError: (e) => errors.push(e) });
    expect(d.tasks.records.get('task-1')?.result).toEqual({ success: false, error: 'Task aborted; order 3 could not be cancelled' });
    expect(errors).toHaveLength(1);
  });
});
