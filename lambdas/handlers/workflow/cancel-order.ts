/** CancelOrder: cancels the placed order after a readiness timeout, or as compensation after an error. */
import { cancelOrderStep, type CancelOrderDeps } from '../../domain/create-order/cancel-order';
import type { CancelResult } from '../../domain/create-order/workflow-state';
import { countMetric, logger, MetricName, tracedHandler } from '../../adapters/observability';
import { budgetedHandler } from '../../adapters/invocation-budget';
import { cancelOrderDeps } from './deps';
import { parseWorkflowState, systemClock, type Clock } from './shared';

/** Builds the task handler around its dependencies (tests pass fakes). */
export const createCancelOrderStepHandler = (
  deps: () => CancelOrderDeps | Promise<CancelOrderDeps>,
  clock: Clock = systemClock,
) =>
  async function cancelOrderTask(input: unknown): Promise<CancelResult> {
    const state = parseWorkflowState(input);
    const result = await cancelOrderStep(state, await deps(), clock());
    if (state.check?.timedOut && !state.error) countMetric(MetricName.OrderTimeouts);
    logger.info('cancel step done', { ...result, after: state.error ? 'error' : 'timeout' });
    return result;
  };

export const handler = budgetedHandler(tracedHandler(createCancelOrderStepHandler(cancelOrderDeps)));
