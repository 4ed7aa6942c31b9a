/** CancelOrder: cancels the task's placed order (see ./workflow-state.ts for the workflow). */
import { MarketplaceInvalidInputError, MarketplaceRejectedError } from '../errors';
import type { MarketplaceClient, PlacementIntents, TaskRepository } from '../ports';
import { taskOwner } from './place-order';
import { findPlacedOrder, type CancelResult, type WorkflowState } from './workflow-state';

export interface CancelOrderDeps {
  /** listOrders finds an order whose create_order answer was lost (intent marker, no order id). */
  readonly marketplace: Pick<MarketplaceClient, 'cancelOrder'> & Partial<Pick<MarketplaceClient, 'listOrders'>>;
  readonly tasks: Pick<TaskRepository, 'get' | 'update'>;
  /** Claims an order found through my_orders for the task, so the fleet watch does not also cancel it as an orphan. */
  readonly intents?: Pick<PlacementIntents, 'claimOrder'>;
}

/**
 * Cancels the task's order, if one was placed (from the state, or from the task record when the
 * failure came between create_order and the state update). "Already cancelled / unknown order"
 * answers (invalid input or a business rejection) count as done: there is nothing left to cancel.
 * Transient errors propagate to the state machine's Retry.
 */
export const cancelTaskOrder = async (
  taskId: string,
  orderIdFromState: number | undefined,
  deps: CancelOrderDeps,
  now: number,
): Promise<CancelResult> => {
  const record = await deps.tasks.get(taskId);
  let orderId = orderIdFromState ?? record?.order_id;
  if (
    orderId === undefined &&
    record?.server_id !== undefined &&
    record.order_intent_at !== undefined &&
    deps.marketplace.listOrders
  ) {
    // create_order may have reached the marketplace with its answer lost, and PlaceOrder gave up
    // before it could reconcile: find that order (my_orders is the source of truth) so it does not
    // stay running after a failure result. A failing read propagates to the step's Retry.
    const found = findPlacedOrder(
      await deps.marketplace.listOrders({ returnCompleted: true }),
      record.server_id,
      record.order_intent_at,
    );
    // The fleet watch may already be cancelling it as an orphan: then it is the watch's to cancel and report.
    if (found && (!deps.intents || (await deps.intents.claimOrder(found.order_id, taskOwner(taskId), now)))) {
      orderId = found.order_id;
      await deps.tasks.update(taskId, { order_id: orderId }, now);
    }
  }
  if (orderId === undefined) return { cancelled: false, note: 'no_order' };
  if (record?.order_cancelled && record.order_id === orderId)
    return { cancelled: false, order_id: orderId, note: 'already_cancelled' };
  try {
    await deps.marketplace.cancelOrder(orderId);
  } catch (error) {
    if (!(error instanceof MarketplaceRejectedError || error instanceof MarketplaceInvalidInputError)) throw error;
    await deps.tasks.update(taskId, { order_cancelled: true }, now);
    return { cancelled: false, order_id: orderId, note: 'not_cancellable' };
  }
  await deps.tasks.update(taskId, { order_cancelled: true }, now);
  return { cancelled: true, order_id: orderId };
};

/** CancelOrder step: cancels the placed order after a readiness timeout or a caught error. */
export const cancelOrderStep = (state: WorkflowState, deps: CancelOrderDeps, now: number): Promise<CancelResult> =>
  cancelTaskOrder(
    state.task_id,
    state.placement && !state.placement.retry ? state.placement.order_id : undefined,
    deps,
    now,
  );
