/** CancelOrder: cancels the placed order after a readiness timeout, or as compensation after an error. */
import { cancelOrderStep, type CancelOrderDeps } from '../../domain/create-order/cancel-order';
import type { CancelResult } from '../../domain/create-order/workflow-state';
import { countMetric, logger, MetricName } from '../../adapters/observability';
import { budgetedHandler } from '../../adapters/invocation-budget';
import { cancelOrderDeps } from './deps';
import { workflowTask } from './shared';

/** Builds the task handler around its dependencies (tests pass fakes). */
export const createCancelOrderStepHandler = workflowTask(
  async (state, deps: CancelOrderDeps, now): Promise<CancelResult> => {
    const result = await cancelOrderStep(state, deps, now);
    if (state.check?.timedOut && !state.error) countMetric(MetricName.OrderTimeouts);
    logger.info('cancel step done', { ...result, after: state.error ? 'error' : 'timeout' });
    return result;
  },
);

export const handler = budgetedHandler(createCancelOrderStepHandler(cancelOrderDeps));
