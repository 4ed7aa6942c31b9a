/**
 * The hourly cap (order-relay.md: MAX_ORDERS_PER_HOUR; issue 24: a caller key's own orders-per-hour):
 * counts a create-order task's order against both sliding windows (QUOTA_WINDOW_MS, one hour, in
 * contract/retry-policy.ts). The event id is the task id, so a retried step counts once. Throws
 * QuotaExceededError (with the window's retry time) when either is full. Run by ReserveQuota
 * (./reserve-quota.ts) after the spending reservation.
 */
import { QuotaExceededError } from '../errors';
import type { SlidingWindow } from '../ports';
import { QUOTA_WINDOW_MS, type WorkflowState } from './workflow-state';

export const countAgainstHourlyCap = async (
  state: WorkflowState,
  quota: SlidingWindow,
  opts: {
    readonly now: number;
    readonly limit: number;
    readonly key: string;
    readonly keyQuota?: (keyName: string) => string;
  },
): Promise<{ readonly count: number }> => {
  // A caller key's own hourly limit (issue 24) first: an order it refuses never counts account-wide.
  const caller = state.origin.caller;
  if (caller?.orders_per_hour !== undefined && opts.keyQuota) {
    const own = await quota.hit(opts.keyQuota(caller.key), {
      now: opts.now,
      windowMs: QUOTA_WINDOW_MS,
      limit: caller.orders_per_hour,
      eventId: state.task_id,
    });
    if (!own.allowed) throw new QuotaExceededError(caller.orders_per_hour, caller.key, own.retryAfterMs);
  }
  const hit = await quota.hit(opts.key, {
    now: opts.now,
    windowMs: QUOTA_WINDOW_MS,
    limit: opts.limit,
    eventId: state.task_id,
  });
  if (!hit.allowed) throw new QuotaExceededError(opts.limit, undefined, hit.retryAfterMs);
  return hit;
};
