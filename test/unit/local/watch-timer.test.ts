import { startWatchTimer } from '../../../local/watch-timer';

/** A sweep the test ends by hand. */
const controlledSweeps = () => {
  const pending: (() => void)[] = [];
  const failing: ((error: Error) => void)[] = [];
  const run = jest.fn(
    () =>
      new Promise<void>((resolve, reject) => {
        pending.push(resolve);
        failing.push(reject);
      }),
  );
  return { run, endLast: () => pending[pending.length - 1](), failLast: (e: Error) => failing[failing.length - 1](e) };
};

describe('Function: startWatchTimer', () => {
  beforeEach(() => jest.useFakeTimers());
  afterEach(() => jest.useRealTimers());

  it('runs a sweep every interval and skips ticks while one is running', async () => {
    const sweeps = controlledSweeps();
    const onSkip = jest.fn();
    const timer = startWatchTimer({ run: sweeps.run, intervalMs: 1_000, onSkip });
    jest.advanceTimersByTime(1_000);
    expect(sweeps.run).toHaveBeenCalledTimes(1);
    jest.advanceTimersByTime(3_000); // the first sweep still runs: three ticks skipped
    expect(sweeps.run).toHaveBeenCalledTimes(1);
    expect(onSkip).toHaveBeenCalledTimes(3);
    sweeps.endLast();
    await Promise.resolve();
    await Promise.resolve();
    jest.advanceTimersByTime(1_000);
    expect(sweeps.run).toHaveBeenCalledTimes(2);
    expect(timer.sweeps()).toBe(2);
    sweeps.endLast();
    await timer.stop();
  });

  it('reports a failed sweep and goes on', async () => {
    const sweeps = controlledSweeps();
    const onError = jest.fn();
    const timer = startWatchTimer({ run: sweeps.run, intervalMs: 500, onError });
    jest.advanceTimersByTime(500);
    sweeps.failLast(new Error('table unavailable'));
    await Promise.resolve();
    await Promise.resolve();
    expect(onError).toHaveBeenCalledWith(expect.objectContaining({ message: 'table unavailable' }));
    jest.advanceTimersByTime(500);
    expect(sweeps.run).toHaveBeenCalledTimes(2);
    sweeps.endLast();
    await timer.stop();
  });

  it('stops: no sweep after stop(), which waits for the one in progress', async () => {
    const sweeps = controlledSweeps();
    const timer = startWatchTimer({ run: sweeps.run, intervalMs: 1_000 });
    jest.advanceTimersByTime(1_000);
    let stopped = false;
    const stopping = timer.stop().then(() => {
      stopped = true;
    });
    await Promise.resolve();
    expect(stopped).toBe(false);
    sweeps.endLast();
    await stopping;
    expect(stopped).toBe(true);
    jest.advanceTimersByTime(10_000);
    expect(sweeps.run).toHaveBeenCalledTimes(1);
  });

  it('refuses a non-positive interval', () => {
    expect(() => startWatchTimer({ run: async () => undefined, intervalMs: 0 })).toThrow(/must be positive/);
  });
});
