/** PlaceOrder: places the order, never twice for one task (see ./workflow-state.ts for the workflow). */
import {
  InvalidOrderRequestError,
  MarketplaceInvalidInputError,
  MarketplaceRejectedError,
  OrderOutcomeUnknownError,
  SoftTimeoutError,
} from '../errors';
import type { CreateOrderRequest, Order } from '../marketplace-types';
import type { MarketplaceClient, ServerClaims, TaskRepository } from '../ports';
import type { TaskRecord } from '../task';
import {
  findPlacedOrder,
  MAX_PLACEMENT_ATTEMPTS,
  RECONCILE_SLACK_SECONDS,
  softDeadlinePassed,
  type ChosenServer,
  type PlacementResult,
  type WorkflowState,
} from './workflow-state';

export interface PlaceOrderDeps {
  readonly marketplace: Pick<MarketplaceClient, 'createOrder' | 'listOrders'>;
  readonly tasks: Pick<TaskRepository, 'get' | 'update' | 'orderEnv'>;
  readonly claims: Pick<ServerClaims, 'release'>;
}

/** Rejections that mean "this server, not this request": search again without it. */
const SERVER_UNAVAILABLE = new Set(['server-already-rented', 'server-offline']);

/** The create_order body for the chosen server; `env` is the task's sealed container env. */
export const orderRequest = (state: WorkflowState, server: ChosenServer, env = state.request.env): CreateOrderRequest => {
  const { request } = state;
  return {
    renting_server: server.id,
    type: request.use_spot ? 'spot' : 'on-demand',
    currency: request.currency,
    image: request.image,
    ports: request.ports,
    ...(env ? { env } : {}),
    ...(request.use_spot && server.spot_bid !== undefined ? { spotprice: server.spot_bid } : {}),
  };
};

/**
 * The order's container env. The values are sealed beside the task record (never in the workflow
 * input); the record's `request.env_names` says the caller asked for some. Missing values (the task
 * ended meanwhile) fail the task rather than place an order without them. An execution started
 * before env was sealed still carries it in `request.env`.
 */
const sealedOrderEnv = async (
  state: WorkflowState,
  record: TaskRecord | undefined,
  deps: PlaceOrderDeps,
): Promise<Readonly<Record<string, string>> | undefined> => {
  const names = record?.request.env_names;
  if (!Array.isArray(names) || names.length === 0) return state.request.env;
  const env = (await deps.tasks.orderEnv?.(state.task_id)) ?? state.request.env;
  if (!env) throw new InvalidOrderRequestError('The container env of this task is no longer stored; no order was placed');
  return env;
};

/**
 * Places the order, never twice for one task. Before create_order the task record gets an intent
 * marker (server_id + order_intent_at); a retried PlaceOrder that finds the marker, or a call whose
 * outcome is unknown / that answers without order_id, reconciles through my_orders by server id and
 * creation time. my_orders is the source of truth: if it shows no such order, none was placed.
 * On server-already-rented / server-offline it releases the claim and asks for a new search
 * (`retry: true`) until MAX_PLACEMENT_ATTEMPTS is used up.
 * Returns the placement and whether this call created the order (for the OrdersPlaced metric).
 */
export const placeOrder = async (
  state: WorkflowState,
  deps: PlaceOrderDeps,
  now: number,
): Promise<{ readonly placement: PlacementResult; readonly placedNow: boolean }> => {
  const search = state.search;
  if (!search) throw new MarketplaceInvalidInputError('PlaceOrder needs a chosen server ($.search)');
  const server = search.server;
  const record = await deps.tasks.get(state.task_id);

  const done = async (orderId: number, serverId: number, placedAt: number, placedNow: boolean) => {
    await deps.tasks.update(state.task_id, { order_id: orderId, server_id: serverId }, now);
    return { placement: { retry: false as const, order_id: orderId, server_id: serverId, placed_at: placedAt }, placedNow };
  };
  // returnCompleted bypasses the shared my_orders cache (fresh read) and also finds an order that
  // already ended: either way it proves this task placed one.
  const reconcile = async (sinceMs: number): Promise<Order | undefined> =>
    findPlacedOrder(await deps.marketplace.listOrders({ returnCompleted: true }), server.id, sinceMs);

  if (record?.order_id !== undefined) {
    // An earlier attempt of this step placed the order and recorded it: never place another.
    return done(record.order_id, record.server_id ?? server.id, record.order_intent_at ?? now, false);
  }
  if (record?.server_id === server.id) {
    // An intent for this server exists: the earlier attempt may have reached the marketplace.
    const intentAt = record.order_intent_at ?? Date.parse(record.updated_at);
    const found = await reconcile(Number.isFinite(intentAt) ? intentAt : now - RECONCILE_SLACK_SECONDS * 1000);
    if (found) return done(found.order_id, server.id, intentAt, false);
  }
  if (softDeadlinePassed(state, now)) throw new SoftTimeoutError();
  const env = await sealedOrderEnv(state, record, deps);

  await deps.tasks.update(state.task_id, { server_id: server.id, order_intent_at: now }, now);
  let orderId: number | undefined;
  try {
    orderId = (await deps.marketplace.createOrder(orderRequest(state, server, env))).order_id;
  } catch (error) {
    if (error instanceof MarketplaceRejectedError && SERVER_UNAVAILABLE.has(error.reason)) {
      // "Already rented" may mean rented by us: an earlier attempt's create_order (outcome unknown)
      // can land after that attempt's reconcile looked. my_orders decides before the server is given up.
      if (record?.server_id === server.id) {
        const late = await reconcile(record.order_intent_at ?? now);
        if (late) return done(late.order_id, server.id, record.order_intent_at ?? now, false);
      }
      await deps.claims.release(server.id, state.task_id);
      if (search.attempt >= MAX_PLACEMENT_ATTEMPTS) throw error;
      return { placement: { retry: true, server_id: server.id, reason: error.reason }, placedNow: false };
    }
    if (!(error instanceof OrderOutcomeUnknownError)) throw error;
    const found = await reconcile(now);
    if (found) return done(found.order_id, server.id, now, true);
    // Thrown for the state machine's Retry: the next attempt reconciles again before placing.
    throw error;
  }
  if (orderId === undefined) {
    const found = await reconcile(now);
    if (!found) throw new OrderOutcomeUnknownError(`create_order on server ${server.id} answered without order_id and my_orders shows no new order`);
    orderId = found.order_id;
  }
  return done(orderId, server.id, now, true);
};
