/** ReportResult: the task's one result (record, callback, chat on a ready order) and the claim release. */
import { reportResult, type ReportResultDeps } from '../../domain/create-order-steps';
import { countMetric, logger, MetricName, tracedHandler } from '../../adapters/observability';
import { budgetedHandler } from '../../adapters/invocation-budget';
import { reportResultDeps } from './notifier-deps';
import { parseWorkflowState, systemClock, type Clock } from './shared';

/** Builds the task handler around its dependencies (tests pass fakes). */
export const makeReportResult = (deps: () => ReportResultDeps | Promise<ReportResultDeps>, clock: Clock = systemClock) =>
  async function reportResultTask(input: unknown): Promise<{ success: boolean; delivered: boolean }> {
    const state = parseWorkflowState(input);
    const { success, delivered, result } = await reportResult(state, await deps(), clock());
    if (delivered) {
      if (success) countMetric(MetricName.OrdersReady);
      else countMetric(MetricName.TasksFailed, { name: 'Kind', value: 'create-order' });
    }
    // The error text is the caller's own failure reason, never a secret; log it for operators.
    logger.info('task finished', { success, delivered, ...('error' in result ? { error: result.error } : {}) });
    return { success, delivered };
  };

export const handler = budgetedHandler(tracedHandler(makeReportResult(reportResultDeps)));
