/**
 * The local stand-in for the fleet watch's EventBridge schedule: invokes the unchanged watch handler
 * every `intervalMs` (WATCH_INTERVAL_SECONDS; any value works locally, 1 s in the e2e tests). A tick
 * that comes while a sweep still runs is skipped (EventBridge would invoke a second, overlapping
 * sweep; the sweep is safe under overlap, but one process gains nothing from it). A failed sweep is
 * reported to `onError` and the timer goes on, as the next scheduled invocation would.
 */
export interface WatchTimerOptions {
  /** One sweep: the handler, invoked as Lambda would (a fresh context per call). */
  readonly run: () => Promise<unknown>;
  readonly intervalMs: number;
  /** A sweep that threw. @default console.error */
  readonly onError?: (error: unknown) => void;
  /** Ticks skipped because the previous sweep was still running (tests, logs). */
  readonly onSkip?: () => void;
  /** How long stop() waits for a sweep in progress. @default 10000 */
  readonly stopWaitMs?: number;
  /**
   * Sweep once right away (a restart on a kept state: a lease that ended while the relay was
   * stopped is ended now, not one interval later). @default false
   */
  readonly runAtStart?: boolean;
}

export interface WatchTimer {
  /** Sweeps started so far. */
  readonly sweeps: () => number;
  /** Sweeps ended so far (failed ones included): a test that must act between two sweeps waits for one to end. */
  readonly completed: () => number;
  /** Stops the timer; resolves once the sweep in progress (if any) ended, or after `stopWaitMs`. */
  stop(): Promise<void>;
}

export const startWatchTimer = (opts: WatchTimerOptions): WatchTimer => {
  if (!(opts.intervalMs > 0)) throw new Error(`watch timer: the interval must be positive, got ${opts.intervalMs} ms`);
  const onError = opts.onError ?? ((error: unknown) => console.error('[local] fleet watch sweep failed', error));
  let running: Promise<void> | undefined;
  let started = 0;
  let completed = 0;
  let stopped = false;

  const tick = (): void => {
    if (stopped) return;
    if (running) {
      opts.onSkip?.();
      return;
    }
    started += 1;
    running = opts
      .run()
      .then(() => undefined, onError)
      .finally(() => {
        completed += 1;
        running = undefined;
      });
  };
  const timer = setInterval(tick, opts.intervalMs);
  timer.unref();
  if (opts.runAtStart) tick();

  return {
    sweeps: () => started,
    completed: () => completed,
    stop: async () => {
      stopped = true;
      clearInterval(timer);
      if (!running) return;
      let wait: NodeJS.Timeout | undefined;
      await Promise.race([
        running,
        new Promise<void>((resolve) => {
          wait = setTimeout(resolve, opts.stopWaitMs ?? 10_000);
        }),
      ]);
      clearTimeout(wait);
    },
  };
};
