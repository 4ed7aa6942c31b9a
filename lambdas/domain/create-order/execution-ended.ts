/** ExecutionEnded: the safety net for executions that ended outside the workflow's Catch (see ./workflow-state.ts). */
import { completeTask } from '../requests/complete-task';
import type { Notifier, ServerClaims, TaskRepository } from '../ports';
import type { SpendStore } from '../teams/spend-budget';
import { FINAL_STATES, failure } from '../task';
import { cancelTaskOrder, type CancelOrderDeps } from './cancel-order';
import { deliveryTargets } from './report-result';
import type { CancelResult } from './workflow-state';

export type EndedStatus = 'TIMED_OUT' | 'FAILED' | 'ABORTED';

export interface ExecutionEndedDeps extends CancelOrderDeps {
  readonly tasks: TaskRepository;
  readonly notifier: Notifier;
  readonly claims: Pick<ServerClaims, 'release'>;
  /** Spending (issue 24): the task's reservation is settled (its order, if any, was just cancelled). */
  readonly spend?: Pick<SpendStore, 'started' | 'settle'>;
}

/**
 * The failure text of an execution that ended outside the workflow's own Catch. `where` says where a
 * timed-out execution was (the local runtime's "stopped in state CheckOrder"; AWS gives none).
 */
export const executionEndedMessage = (
  status: EndedStatus,
  hardLimitSeconds: number,
  cause?: string,
  where?: string,
): string => {
  if (status === 'TIMED_OUT')
    return `Task timed out after ${hardLimitSeconds} s (hard limit)${where ? `: ${where}` : ''}`;
  if (status === 'ABORTED') return 'Task aborted';
  return cause ? `Task failed: ${cause}` : 'Task failed';
};

/**
 * The safety net for executions that ended TIMED_OUT, FAILED or ABORTED: if the task has no result
 * yet, cancels its dangling order (best effort: a failed cancel is reported in the message rather
 * than blocking the result), then ends the task with a failure. Returns what it did.
 */
export const handleExecutionEnded = async (
  ended: { readonly taskId: string; readonly status: EndedStatus; readonly cause?: string; readonly where?: string },
  deps: ExecutionEndedDeps,
  opts: { readonly now: number; readonly hardLimitSeconds: number; readonly onCancelError?: (error: unknown) => void },
): Promise<{ readonly action: 'none' | 'completed'; readonly cancel?: CancelResult; readonly delivered?: boolean }> => {
  const record = await deps.tasks.get(ended.taskId);
  if (!record || FINAL_STATES.includes(record.state)) return { action: 'none' };
  let cancel: CancelResult | undefined;
  let message = executionEndedMessage(ended.status, opts.hardLimitSeconds, ended.cause, ended.where);
  try {
    cancel = await cancelTaskOrder(ended.taskId, undefined, deps, opts.now);
  } catch (error) {
    opts.onCancelError?.(error);
    message += `; order ${record.order_id} could not be cancelled`;
  }
  if (deps.spend) {
    const nowSeconds = Math.floor(opts.now / 1000);
    const placedAt = record.order_intent_at === undefined ? nowSeconds : Math.floor(record.order_intent_at / 1000);
    if (record.order_id !== undefined)
      await deps.spend.started(ended.taskId, { order_id: record.order_id, started_at: placedAt });
    await deps.spend.settle(ended.taskId, { ended_at: nowSeconds }, nowSeconds);
  }
  // The caller's URLs come from the record: the execution input carries none (execution history).
  const { callbackUrl, origin } = deliveryTargets(record, record.origin);
  const delivered = await completeTask(
    deps,
    { task_id: ended.taskId, origin, callback_url: callbackUrl },
    failure(message),
    opts.now,
  );
  if (record.server_id !== undefined) await deps.claims.release(record.server_id, ended.taskId);
  return { action: 'completed', cancel, delivered };
};
