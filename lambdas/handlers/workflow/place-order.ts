/** PlaceOrder: create_order once per task (intent marker + my_orders reconciliation), or ask for a new search. */
import { placeOrder, type PlaceOrderDeps } from '../../domain/create-order/place-order';
import type { PlacementResult } from '../../domain/create-order/workflow-state';
import { countMetric, logger, MetricName, tracedHandler } from '../../adapters/observability';
import { budgetedHandler } from '../../adapters/invocation-budget';
import { placeOrderDeps } from './deps';
import { parseWorkflowState, systemClock, type Clock } from './shared';

/** Builds the task handler around its dependencies (tests pass fakes). */
export const createPlaceOrderStepHandler = (
  deps: () => PlaceOrderDeps | Promise<PlaceOrderDeps>,
  clock: Clock = systemClock,
) =>
  async function placeOrderTask(input: unknown): Promise<PlacementResult> {
    const state = parseWorkflowState(input);
    const { placement, placedNow } = await placeOrder(state, await deps(), clock());
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
  };

export const handler = budgetedHandler(tracedHandler(createPlaceOrderStepHandler(placeOrderDeps)));
