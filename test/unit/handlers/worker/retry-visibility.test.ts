import { retryVisibilitySeconds } from '../../../../lambdas/handlers/worker/sqs-message-visibility';

describe('Function: retryVisibilitySeconds', () => {
  it('waits 2, 4 and 8 seconds after the 1st, 2nd and 3rd failed receive', () => {
    expect([1, 2, 3].map((n) => retryVisibilitySeconds(n))).toEqual([2, 4, 8]);
  });

  it('scales the visibility by the base and never goes below 0 or above 12 hours', () => {
    expect(retryVisibilitySeconds(3, 10)).toBe(0);
    expect(retryVisibilitySeconds(3, 250)).toBe(2);
    expect(retryVisibilitySeconds(40)).toBe(43_200);
  });
});
