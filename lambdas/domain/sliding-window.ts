/**
 * Exact rolling-window counting (rate limit per address, hourly order quota). Pure: the caller
 * loads the stored events, calls `slideWindow`, and stores `events` back when they changed.
 */

/** One counted event: its id (for idempotency) and when it happened (epoch ms). */
export interface WindowEvent {
  readonly id: string;
  readonly t: number;
}

export interface SlideInput {
  readonly events: readonly WindowEvent[];
  readonly now: number;
  readonly windowMs: number;
  readonly limit: number;
  readonly eventId: string;
}

export interface SlideOutcome {
  readonly allowed: boolean;
  /** 0 when allowed; else ms until enough in-window events have left for one more to fit. */
  readonly retryAfterMs: number;
  /** The events to store: in-window ones, plus the new one when allowed. A rejection is not recorded. */
  readonly events: readonly WindowEvent[];
  /** Events in the window after this hit. */
  readonly count: number;
  /** Whether `events` differs from what was stored (a repeat or a rejection with nothing pruned needs no write). */
  readonly changed: boolean;
}

/**
 * Counts one event at `now` when fewer than `limit` events lie in (now - windowMs, now].
 * Recording the same `eventId` twice within the window counts once (the repeat is allowed).
 */
export const slideWindow = ({ events, now, windowMs, limit, eventId }: SlideInput): SlideOutcome => {
  const cutoff = now - windowMs;
  const inWindow = events.filter((e) => e.t > cutoff).sort((a, b) => a.t - b.t);
  const pruned = inWindow.length !== events.length;
  if (inWindow.some((e) => e.id === eventId)) {
    return { allowed: true, retryAfterMs: 0, events: inWindow, count: inWindow.length, changed: pruned };
  }
  if (inWindow.length < limit) {
    const next = [...inWindow, { id: eventId, t: now }];
    return { allowed: true, retryAfterMs: 0, events: next, count: next.length, changed: true };
  }
  // One more fits once count - limit + 1 of the oldest events have left; the event at t leaves at t + windowMs.
  const blocking = inWindow[inWindow.length - Math.max(1, limit)] as WindowEvent | undefined;
  // A limit of 0 (or less) never admits anything: wait a whole window.
  const retryAfterMs = limit <= 0 || !blocking ? windowMs : Math.max(1, blocking.t + windowMs - now);
  return { allowed: false, retryAfterMs, events: inWindow, count: inWindow.length, changed: pruned };
};
