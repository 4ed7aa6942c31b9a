import { reserveQuota } from '../../../../lambdas/domain/create-order/reserve-quota';
import { QuotaExceededError } from '../../../../lambdas/domain/errors';
import { aState } from '../../../fakes/builders';
import { FakeSlidingWindow } from '../../../fakes/sliding-window';

const NOW = 1_000_000;

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
    await expect(reserveQuota(aState({ task_id: 'c' }), { quota }, opts)).rejects.toThrow(
      'Hourly order limit reached (2 per hour)',
    );
  });
});
