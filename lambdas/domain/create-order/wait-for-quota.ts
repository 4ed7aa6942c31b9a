/**
 * ReserveQuota for a standing order (issue 23): "waiting tasks count against the hourly order cap
 * only when placed". A standing order whose wait has not ended and whose order the hourly cap (the
 * account's or its caller key's) or a spending budget refuses does not fail: it goes back to the
 * waiting queue in its place (its `accepted_at` is kept), gives its server claim and its spending
 * reservation back, and is held until the refusal may have cleared (`held_until`): the fleet watch
 * does not resume it before then. When its wait ends while held, it fails with the refusal's text.
 * Every other task, and every other error, behaves exactly as ReserveQuota alone.
 *
 * Pure: time arrives as `opts.now` (epoch ms).
 */
import { BudgetExceededError, QuotaExceededError } from '../errors';
import type { ServerClaims, TaskRepository, WaitingTasks } from '../ports';
import type { SpendStore } from '../teams/spend-budget';
import { mayWait, waitingEntry } from '../recovery/standing-orders';
import { reserveQuota, type ReserveQuotaDeps, type Reserved } from './reserve-quota';
import type { WorkflowState } from './workflow-state';

/** A budget refusal is tried again this often: spending frees as orders settle, which no clock foretells. */
export const BUDGET_RETRY_SECONDS = 300;

/** What ReserveQuota answers for a standing order that waits again (the state machine ends the execution there). */
export interface HeldResult {
  readonly waiting: true;
  /** Epoch seconds. */
  readonly waiting_until: number;
  /** Epoch seconds: the watch does not resume the task before. */
  readonly held_until: number;
  /** The refusal's text. */
  readonly held_by: string;
}

/**
 * When a refused standing order may be tried again (epoch seconds), or undefined when `error` is not
 * a refusal a standing order waits out: the hourly cap, when its window has room again; a budget,
 * every BUDGET_RETRY_SECONDS, and at the latest when the UTC day changes (a new day's budget).
 */
export const heldUntil = (error: unknown, nowMs: number): number | undefined => {
  if (error instanceof QuotaExceededError) return Math.ceil((nowMs + Math.max(1000, error.retryAfterMs ?? 0)) / 1000);
  if (error instanceof BudgetExceededError)
    return Math.min(Math.floor(nowMs / 1000) + BUDGET_RETRY_SECONDS, (Math.floor(nowMs / 86_400_000) + 1) * 86_400);
  return undefined;
};

export interface WaitForQuotaDeps extends ReserveQuotaDeps {
  readonly spend?: Pick<SpendStore, 'reserve' | 'settle'>;
  /** The standing-order queue and what going back to it touches. Absent: a refusal fails the task, as ReserveQuota alone. */
  readonly standing?: {
    readonly waiting: Pick<WaitingTasks, 'add' | 'get'>;
    readonly tasks: Pick<TaskRepository, 'update'>;
    readonly claims: Pick<ServerClaims, 'release'>;
  };
}

/**
 * ReserveQuota, or back to waiting for a standing order the cap or a budget refuses (see above).
 * Only before this execution's first create_order (a placement retry may have an order landing
 * late, which the failure path's CancelOrder reconciles). A retried step whose first attempt
 * already queued the task (its next round's entry is there) answers the same without counting.
 */
export const reserveQuotaOrWait = async (
  state: WorkflowState,
  deps: WaitForQuotaDeps,
  opts: Parameters<typeof reserveQuota>[2],
): Promise<{ readonly count: number; readonly reserved?: Reserved } | HeldResult> => {
  const standing =
    deps.standing && state.search && state.placement === undefined && mayWait(state, opts.now)
      ? deps.standing
      : undefined;
  const round = (state.resume?.round ?? 0) + 1;
  const waitingUntil = state.timing.waiting_until as number;
  if (standing) {
    const own = await standing.waiting.get(state.task_id);
    const queued = own?.round === round ? own : undefined;
    if (queued?.held_until !== undefined) {
      await standing.tasks.update(state.task_id, { state: 'waiting', waiting_until: waitingUntil }, opts.now);
      return {
        waiting: true,
        waiting_until: waitingUntil,
        held_until: queued.held_until,
        held_by: queued.held_by ?? '',
      };
    }
  }
  try {
    return await reserveQuota(state, deps, opts);
  } catch (error) {
    const until = heldUntil(error, opts.now);
    if (!standing || !state.search || until === undefined) throw error;
    const reason = (error as Error).message;
    const nowSeconds = Math.floor(opts.now / 1000);
    // A cap refusal comes after the spending reservation: given back (no order was placed, nothing is charged).
    if (deps.spend) await deps.spend.settle(state.task_id, { ended_at: nowSeconds }, nowSeconds);
    await standing.claims.release(state.search.server.id, state.task_id);
    await standing.waiting.add({ ...waitingEntry(state, round), held_until: until, held_by: reason });
    await standing.tasks.update(state.task_id, { state: 'waiting', waiting_until: waitingUntil }, opts.now);
    return { waiting: true, waiting_until: waitingUntil, held_until: until, held_by: reason };
  }
};
