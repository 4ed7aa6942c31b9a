/**
 * The safety net: EventBridge "Step Functions Execution Status Change" for executions that ended
 * TIMED_OUT, FAILED or ABORTED. A task without a result gets its dangling order cancelled and a
 * failure result, so every task ends with exactly one result.
 */
import * as z from 'zod/mini';
import { handleExecutionEnded, type ExecutionEndedDeps } from '../../domain/create-order/execution-ended';
import { countMetric, invocationHandler, logger, MetricName, tagTask } from '../../adapters/observability';
import { callbackWorstCaseMs } from '../../adapters/http-notifier';
import { budgetedHandler, withReserve } from '../../adapters/invocation-budget';
import { HARD_TIME_LIMIT_SECONDS } from '../../../contract/limits';
import { executionEndedDeps } from './notifier-deps';
import { systemClock, type Clock } from './shared';
import { ENGLISH_TEXTS } from '../../domain/zod-texts';

// Only the task id is read from the execution input; where the result goes is in the task record.
const ExecutionInputSchema = z.object({
  task_id: z.optional(z.string().check(z.minLength(1))),
});

export const ExecutionStatusChangeSchema = z.object({
  source: z.optional(z.literal('aws.states')),
  'detail-type': z.optional(z.literal('Step Functions Execution Status Change')),
  detail: z.object({
    executionArn: z.optional(z.string()),
    stateMachineArn: z.optional(z.string()),
    name: z.string().check(z.minLength(1)),
    status: z.enum(['TIMED_OUT', 'FAILED', 'ABORTED']),
    input: z.optional(z.nullable(z.string())),
    error: z.optional(z.nullable(z.string())),
    cause: z.optional(z.nullable(z.string())),
  }),
});
export type ExecutionStatusChangeEvent = z.input<typeof ExecutionStatusChangeSchema>;

const parseInput = (raw: string | null | undefined): z.infer<typeof ExecutionInputSchema> => {
  if (!raw) return {};
  try {
    const parsed = ExecutionInputSchema.safeParse(JSON.parse(raw));
    return parsed.success ? parsed.data : {};
  } catch {
    return {};
  }
};

/**
 * Time the safety net keeps for the failure result after the cancel: a callback's worst case (its
 * Slack response_url reply runs alongside) plus the final write and the claim release.
 */
export const REPORT_RESERVE_MS = callbackWorstCaseMs() + 5_000;

/**
 * The marketplace as the cancel may use it: its calls see the invocation's remaining time minus
 * REPORT_RESERVE_MS, so a slow marketplace makes the cancel give up (and be named in the message)
 * while the callback still has its whole budget.
 */
const leavingTimeToReport = (marketplace: ExecutionEndedDeps['marketplace']): ExecutionEndedDeps['marketplace'] => ({
  cancelOrder: (orderId) => withReserve(REPORT_RESERVE_MS, () => marketplace.cancelOrder(orderId)),
  ...(marketplace.listOrders
    ? { listOrders: (options) => withReserve(REPORT_RESERVE_MS, () => marketplace.listOrders!(options)) }
    : {}),
});

/** Builds the handler around its dependencies (tests pass fakes). */
export const createExecutionEndedHandler = (
  deps: () => ExecutionEndedDeps | Promise<ExecutionEndedDeps>,
  clock: Clock = systemClock,
) =>
  async function executionEnded(event: unknown): Promise<{ action: string }> {
    const { detail } = ExecutionStatusChangeSchema.parse(event, ENGLISH_TEXTS);
    const input = parseInput(detail.input);
    const taskId = input.task_id ?? detail.name;
    tagTask(taskId);
    const d = await deps();
    const outcome = await handleExecutionEnded(
      {
        taskId,
        status: detail.status,
        cause: detail.error ?? undefined,
        // A timeout's cause (none from AWS; the local runtime names the state a stopped relay left it in).
        ...(detail.status === 'TIMED_OUT' && detail.cause ? { where: detail.cause } : {}),
      },
      { ...d, marketplace: leavingTimeToReport(d.marketplace) },
      {
        now: clock(),
        hardLimitSeconds: HARD_TIME_LIMIT_SECONDS,
        onCancelError: (error) => logger.error('dangling order not cancelled', { error }),
      },
    );
    if (outcome.action === 'completed') {
      logger.warn('execution ended outside the workflow; task failed by the safety net', {
        status: detail.status,
        cancel: outcome.cancel,
      });
      if (outcome.delivered) countMetric(MetricName.TasksFailed, { name: 'Kind', value: 'create-order' });
    }
    return { action: outcome.action };
  };

export const handler = budgetedHandler(invocationHandler(createExecutionEndedHandler(executionEndedDeps)));
