import { withSoftDeadline } from '../../../../lambdas/handlers/worker/soft-deadline';

describe('Function: withSoftDeadline', () => {
  afterEach(() => jest.useRealTimers());

  it('rejects with the soft limit text when the work outlasts the limit', async () => {
    jest.useFakeTimers();
    const never = new Promise<string>(() => undefined);
    const raced = withSoftDeadline(never, 300_000);
    jest.advanceTimersByTime(300_000);
    await expect(raced).rejects.toThrow('Task exceeded its soft time limit of 300 s');
  });

  it('returns the result of work that settles in time and clears its timer', async () => {
    jest.useFakeTimers();
    await expect(withSoftDeadline(Promise.resolve(7), 300_000)).resolves.toBe(7);
    expect(jest.getTimerCount()).toBe(0);
  });
});
