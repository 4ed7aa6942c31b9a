/** ReportResult: a ready order recorded for the fleet watch (and its lease), the task's one result (record, callback, chat on a ready order) and the claim release. */
import { reportResult, type ReportResultDeps } from '../../domain/create-order/report-result';
import { countMetric, logger, MetricName, spendMetric } from '../../adapters/observability';
import { budgetedHandler } from '../../adapters/invocation-budget';
import { reportResultDeps } from './notifier-deps';
import { workflowTask } from './shared';

/**
 * The claim release comes after the result is final: a failure there must not fail the step (a
 * retry could no longer announce the order, and an execution FAILED after a delivered result would
 * raise alarms on a good order). The claim expires on its own (CLAIM_TTL_SECONDS).
 */
const releaseBestEffort = (claims: ReportResultDeps['claims']): ReportResultDeps['claims'] => ({
  release: async (serverId, taskId) => {
    try {
      await claims.release(serverId, taskId);
    } catch (error) {
      logger.warn('server claim not released; it expires on its own', { server_id: serverId, error });
    }
  },
});

/**
 * A ready order is recorded with the fleet watch before the final write (see reportResult): a failure
 * is counted and logged, then fails the step so the state machine retries it.
 */
const trackCounted = (leases: ReportResultDeps['leases']): ReportResultDeps['leases'] => ({
  track: async (order, opts) => {
    try {
      await leases.track(order, opts);
    } catch (error) {
      countMetric(MetricName.LeaseRecordFailures);
      logger.warn('placed order not recorded for the fleet watch; the step is retried', {
        order_id: order.order_id,
        error,
      });
      throw error;
    }
  },
});

/** Builds the task handler around its dependencies (tests pass fakes). */
export const createReportResultStepHandler = workflowTask(
  async (state, d: ReportResultDeps, now): Promise<{ success: boolean; delivered: boolean }> => {
    const { success, delivered, result, settled } = await reportResult(
      state,
      { ...d, claims: releaseBestEffort(d.claims), leases: trackCounted(d.leases), log: logger },
      now,
    );
    if (settled) spendMetric('SpendSettledUsd', settled.key, settled.cost_usd);
    if (delivered) {
      if (success) countMetric(MetricName.OrdersReady);
      else countMetric(MetricName.TasksFailed, { name: 'Kind', value: 'create-order' });
    }
    // The error text is the caller's own failure reason, never a secret; log it for operators.
    logger.info('task finished', { success, delivered, ...('error' in result ? { error: result.error } : {}) });
    return { success, delivered };
  },
);

export const handler = budgetedHandler(createReportResultStepHandler(reportResultDeps));
