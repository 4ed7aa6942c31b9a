/** CheckOrder: one readiness poll (see ./workflow-state.ts for the workflow). */
import { MarketplaceInvalidInputError } from '../errors';
import type { MarketplaceClient } from '../ports';
import { softDeadlinePassed, type CheckResult, type WorkflowState } from './workflow-state';

export interface CheckOrderDeps {
  readonly marketplace: Pick<MarketplaceClient, 'listOrders'>;
}

/** One readiness poll: ready when my_orders shows the order `running`; timed out past the readiness window or the soft deadline. */
export const checkOrder = async (state: WorkflowState, deps: CheckOrderDeps, now: number): Promise<CheckResult> => {
  const placement = state.placement;
  if (!placement || placement.retry) throw new MarketplaceInvalidInputError('CheckOrder needs a placed order ($.placement)');
  const orders = await deps.marketplace.listOrders();
  const order = orders.find((o) => o.order_id === placement.order_id);
  const summary = order ? { order_id: order.order_id, status: order.status, ssh_connection: order.connection?.ssh ?? null } : undefined;
  const ready = order?.status === 'running';
  if (ready) return { ready: true, timedOut: false, order: summary, ready_at: now };
  const readyTimeout = now > placement.placed_at + state.timing.ready_timeout_seconds * 1000;
  const soft = softDeadlinePassed(state, now);
  const reason = readyTimeout ? 'ready_timeout' : soft ? 'soft_deadline' : undefined;
  return { ready: false, timedOut: reason !== undefined, ...(reason ? { reason } : {}), ...(summary ? { order: summary } : {}) };
};
