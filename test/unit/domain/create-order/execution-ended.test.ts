import { handleExecutionEnded } from '../../../../lambdas/domain/create-order/execution-ended';
import { MarketplaceUnavailableError } from '../../../../lambdas/domain/errors';
import { FakeClaims } from '../../../fakes/claims';
import { FakeMarketplace } from '../../../fakes/marketplace';
import { FakeNotifier } from '../../../fakes/notifier';
import { FakeTasks } from '../../../fakes/tasks';

const NOW = 1_000_000;

describe('Function: handleExecutionEnded', () => {
  const deps = () => {
    const tasks = new FakeTasks();
    return { tasks, notifier: new FakeNotifier(), claims: new FakeClaims(), marketplace: new FakeMarketplace() };
  };

  it('leaves a finished task alone', async () => {
    const d = deps();
    d.tasks.seed('task-1', { state: 'succeeded', order_id: 3 });
    expect(
      await handleExecutionEnded({ taskId: 'task-1', status: 'TIMED_OUT' }, d, { now: NOW, hardLimitSeconds: 600 }),
    ).toEqual({ action: 'none' });
    expect(d.marketplace.cancelled).toHaveLength(0);
  });

  it('cancels the dangling order and fails the task', async () => {
    const d = deps();
    d.tasks.seed('task-1', { state: 'running', order_id: 3, server_id: 4, request: { callback_url: 'http://cb/x' } });
    d.claims.holders.set(4, 'task-1');
    const outcome = await handleExecutionEnded({ taskId: 'task-1', status: 'TIMED_OUT' }, d, {
      now: NOW,
      hardLimitSeconds: 600,
    });
    expect(outcome).toMatchObject({ action: 'completed', delivered: true, cancel: { cancelled: true, order_id: 3 } });
    expect(d.marketplace.cancelled).toEqual([3]);
    expect(d.notifier.callbacks[0]).toMatchObject({
      url: 'http://cb/x',
      result: { success: false, error: 'Task timed out after 600 s (hard limit)' },
    });
    expect(d.claims.holders.has(4)).toBe(false);
  });

  it('names where a timed-out execution was when told (the local runtime stopped past the deadline)', async () => {
    const d = deps();
    d.tasks.seed('task-1', { state: 'running', request: { callback_url: 'http://cb/x' } });
    await handleExecutionEnded(
      {
        taskId: 'task-1',
        status: 'TIMED_OUT',
        where: 'the relay was stopped past the deadline while the task was in state CheckOrder',
      },
      d,
      { now: NOW, hardLimitSeconds: 600 },
    );
    expect(d.notifier.callbacks[0]?.result).toEqual({
      success: false,
      error:
        'Task timed out after 600 s (hard limit): the relay was stopped past the deadline while the task was in state CheckOrder',
    });
  });

  it('still ends the task when the cancel fails', async () => {
    const d = deps();
    d.tasks.seed('task-1', { state: 'running', order_id: 3 });
    d.marketplace.cancelError = new MarketplaceUnavailableError('down');
    const errors: unknown[] = [];
    await handleExecutionEnded({ taskId: 'task-1', status: 'ABORTED' }, d, {
      now: NOW,
      hardLimitSeconds: 600,
      onCancelError: (e) => errors.push(e),
    });
    expect(d.tasks.records.get('task-1')?.result).toEqual({
      success: false,
      error: 'Task aborted; order 3 could not be cancelled',
    });
    expect(errors).toHaveLength(1);
  });
});
