import { checkOrder } from '../../../../lambdas/domain/create-order/check-order';
import { aPlacedOrder, aState } from '../../../fakes/builders';
import { FakeMarketplace } from '../../../fakes/marketplace';

const NOW = 1_000_000;

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
