/** PlaceOrder: create_order once per task (intent marker + my_orders reconciliation), or ask for a new search. */
import { placeOrder, type PlaceOrderDeps } from '../../domain/create-order/place-order';
import type { PlacementResult } from '../../domain/create-order/workflow-state';
import { countMetric, logger, MetricName } from '../../adapters/observability';
import { budgetedHandler } from '../../adapters/invocation-budget';
import { placeOrderDeps } from './deps';
import { workflowTask } from './shared';

/** Builds the task handler around its dependencies (tests pass fakes). */
export const createPlaceOrderStepHandler = workflowTask(
  async (state, deps: PlaceOrderDeps, now): Promise<PlacementResult> => {
    const { placement, placedNow } = await placeOrder(state, deps, now);
    if (placement.retry) {
      logger.warn('server unavailable, searching again', { server_id: placement.server_id, reason: placement.reason });
    } else {
      logger.info(placedNow ? 'order placed' : 'order reconciled', {
        order_id: placement.order_id,
        server_id: placement.server_id,
      });
      if (placedNow) countMetric(MetricName.OrdersPlaced);
    }
    return placement;
  },
);

export const handler = budgetedHandler(createPlaceOrderStepHandler(placeOrderDeps));
