import { cancelTaskOrder } from '../../../../lambdas/domain/create-order/cancel-order';
import { MarketplaceRejectedError, MarketplaceUnavailableError } from '../../../../lambdas/domain/errors';
import { FakeMarketplace } from '../../../fakes/marketplace';
import { FakeTasks } from '../../../fakes/tasks';

const NOW = 1_000_000;

describe('Function: cancelTaskOrder', () => {
  it('cancels the recorded order and marks it', async () => {
    const marketplace = new FakeMarketplace();
    const tasks = new FakeTasks();
    tasks.seed('task-1', { order_id: 7 });
    expect(await cancelTaskOrder('task-1', undefined, { marketplace, tasks }, NOW)).toEqual({
      cancelled: true,
      order_id: 7,
    });
    expect(marketplace.cancelled).toEqual([7]);
    expect(tasks.records.get('task-1')?.order_cancelled).toBe(true);
    // A second call does not cancel again.
    expect(await cancelTaskOrder('task-1', undefined, { marketplace, tasks }, NOW)).toMatchObject({
      cancelled: false,
      note: 'already_cancelled',
    });
  });

  it('does nothing without an order', async () => {
    const tasks = new FakeTasks();
    tasks.seed();
    const marketplace = new FakeMarketplace();
    expect(await cancelTaskOrder('task-1', undefined, { marketplace, tasks }, NOW)).toEqual({
      cancelled: false,
      note: 'no_order',
    });
  });

  it('treats a rejection as nothing left to cancel and rethrows transient errors', async () => {
    const tasks = new FakeTasks();
    tasks.seed();
    const marketplace = new FakeMarketplace();
    marketplace.cancelError = new MarketplaceRejectedError('order-not-found');
    expect(await cancelTaskOrder('task-1', 3, { marketplace, tasks }, NOW)).toMatchObject({
      cancelled: false,
      note: 'not_cancellable',
    });
    marketplace.cancelError = new MarketplaceUnavailableError('down');
    await expect(cancelTaskOrder('task-2', 3, { marketplace, tasks }, NOW)).rejects.toBeInstanceOf(
      MarketplaceUnavailableError,
    );
  });
});
