/**
 * Ends a task with exactly one result. Whoever wins the conditional "finish" write (the workflow's
 * Report step, the execution-ended safety net, or the job worker) is the only one that delivers.
 */
import { marketplacePriceText } from '../leases/lease';
import type { Notifier, TaskRepository } from '../ports';
import type { TaskRecord, TaskResult } from '../task';

export interface CompleteTaskDeps {
  readonly tasks: TaskRepository;
  readonly notifier: Notifier;
}

/** Whether a result counts as success for the task state. */
export const isSuccessResult = (result: TaskResult): boolean => !('success' in result) || result.success === true;

/** Short text for a Slack response_url reply. */
export const resultText = (taskId: string, result: TaskResult): string => {
  if ('error' in result) return `Task ${taskId} failed: ${result.error}`;
  if ('message' in result) return `Task ${taskId}: ${result.message}`;
  if ('ssh_connection' in result)
    return `Task ${taskId}: order ${result.order_id} is ${result.status}. ${result.ssh_connection}`;
  if ('lease_expires_at' in result)
    return `Task ${taskId}: order ${result.order_id} lease ends at ${new Date(result.lease_expires_at * 1000).toISOString()}`;
  if ('desired_price' in result)
    return `Task ${taskId}: order ${result.order_id} spot price set to ${marketplacePriceText(result.desired_price, result.currency, result.desired_price_usd_per_hour)}`;
  if ('state' in result) return `Task ${taskId}: task ${result.task_id} ${result.state}`;
  if ('total_orders' in result)
    return `Task ${taskId}: ${result.total_orders} orders, ${result.active} running, ${result.creating} creating`;
  return `Task ${taskId}: order ${result.order_id} ${result.status}`;
};

/**
 * Records the final result and, if this call made it final, delivers it to callback_url and to the
 * Slack response_url. Returns whether this call delivered (false = another path already finished it).
 * `finisher`: see TaskRepository.finish (only for a caller never run twice at once for one task).
 */
export const completeTask = async (
  deps: CompleteTaskDeps,
  task: Pick<TaskRecord, 'task_id' | 'origin'> & { callback_url?: string },
  result: TaskResult,
  now: number,
  finisher?: string,
  /** What the signed callback carries when it differs from the stored result (issue 37: the Jupyter token). */
  delivered: TaskResult = result,
): Promise<boolean> => {
  const won = await deps.tasks.finish(
    task.task_id,
    isSuccessResult(result) ? 'succeeded' : 'failed',
    result,
    now,
    finisher,
  );
  if (!won) return false;
  const deliveries: Promise<unknown>[] = [];
  if (task.callback_url) deliveries.push(deps.notifier.callback(task.callback_url, task.task_id, delivered));
  if (task.origin.responseUrl && deps.notifier.slackResponse) {
    deliveries.push(deps.notifier.slackResponse(task.origin.responseUrl, resultText(task.task_id, result)));
  }
  await Promise.all(deliveries);
  // A named finisher may be retried (a crash after this point): its retry must not deliver again.
  // Best effort: a failed mark risks a second delivery (same X-Webhook-Id), never a lost one.
  if (finisher !== undefined) await deps.tasks.markDelivered(task.task_id, now).catch(() => undefined);
  return true;
};
