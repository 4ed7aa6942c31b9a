/** ReserveQuota: counts the task's order against the hourly cap (see ./workflow-state.ts for the workflow). */
import { QuotaExceededError } from '../errors';
import type { SlidingWindow } from '../ports';
import { QUOTA_WINDOW_MS, type WorkflowState } from './workflow-state';

export interface ReserveQuotaDeps {
  readonly quota: SlidingWindow;
}

/**
 * Counts this task's order against the account-wide hourly cap. The event id is the task id, so a
 * retried step or a second placement attempt of the same task counts once.
 */
export const reserveQuota = async (
  state: WorkflowState,
  deps: ReserveQuotaDeps,
  opts: { readonly now: number; readonly limit: number; readonly key: string; readonly keyQuota?: (keyName: string) => string },
): Promise<{ readonly count: number }> => {
  // A caller key's own hourly limit (issue 24) first: an order it refuses never counts account-wide.
  const caller = state.origin.caller;
  if (caller?.orders_per_hour !== undefined && opts.keyQuota) {
    const own = await deps.quota.hit(opts.keyQuota(caller.key), { now: opts.now, windowMs: QUOTA_WINDOW_MS, limit: caller.orders_per_hour, eventId: state.task_id });
    if (!own.allowed) throw new QuotaExceededError(caller.orders_per_hour, caller.key);
  }
  const hit = await deps.quota.hit(opts.key, { now: opts.now, windowMs: QUOTA_WINDOW_MS, limit: opts.limit, eventId: state.task_id });
  if (!hit.allowed) throw new QuotaExceededError(opts.limit);
  return { count: hit.count };
};
