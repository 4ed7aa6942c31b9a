/**
 * The create-order workflow's steps as pure use cases (one per Step Functions task). Each takes the
 * workflow state document, its ports and `now`, and returns the small JSON the state machine stores.
 * The state machine (lib/constructs/order-workflow.ts) wires them: FindServer ▸ ReserveQuota ▸
 * PlaceOrder ▸ (CheckOrder ▸ Wait)* ▸ CancelOrder on timeout/error ▸ ReportResult.
 */
import { orderReadyText } from './chat-messages';
import { completeTask } from './complete-task';
import {
  InvalidOrderRequestError,
  MarketplaceInvalidInputError,
  MarketplaceRejectedError,
  NoServerAvailableError,
  OrderOutcomeUnknownError,
  QuotaExceededError,
  SoftTimeoutError,
} from './errors';
import { leaseExpiresAt, serverFitsLease } from './lease';
import type { LeaseStore } from './lease-ports';
import type { CreateOrderRequest, Order } from './marketplace-types';
import { findMatchingServers, noMatchMessage } from './matching';
import type { CreateOrderWorkflowInput, MarketplaceClient, Notifier, ServerClaims, SlidingWindow, TaskRepository } from './ports';
import { spotBidFor } from './spot-bid';
import { FINAL_STATES, failure } from './task';
import type { CreateOrderSuccess, FailureResult, TaskRecord, TaskResult } from './task';

/** Placement attempts per task: the first server plus two more after rented/offline rejections. */
export const MAX_PLACEMENT_ATTEMPTS = 3;
/** A claim outlives the hard limit (600 s), so a crashed task's claim still expires on its own. */
export const CLAIM_TTL_SECONDS = 900;
/** Clock skew allowed between us and the marketplace when matching `created` during reconciliation. */
export const RECONCILE_SLACK_SECONDS = 30;
/** The rolling window of the hourly order cap. */
export const QUOTA_WINDOW_MS = 3_600_000;

/** The server FindServer chose, reduced to what later steps and the result need. */
export interface ChosenServer {
  readonly id: number;
  readonly gpu_array: readonly string[];
  /** usd.spot of the server: the result's price_usd (spec §2.3), null when not stated. */
  readonly price_usd: number | null;
  /** price.spot[currency] × 1.1 for spot orders. */
  readonly spot_bid?: number;
}

/** Output of FindServer, at `$.search`. */
export interface SearchResult {
  readonly server: ChosenServer;
  /** 1-based placement attempt this search serves. */
  readonly attempt: number;
  /** Servers tried and rejected so far. */
  readonly excluded: readonly number[];
}

/** Output of PlaceOrder, at `$.placement`: an order, or a request to search again without the server. */
export type PlacementResult =
  | { readonly retry: false; readonly order_id: number; readonly server_id: number; readonly placed_at: number }
  | { readonly retry: true; readonly server_id: number; readonly reason: string };

/** Output of CheckOrder, at `$.check`. */
export interface CheckResult {
  readonly ready: boolean;
  readonly timedOut: boolean;
  readonly reason?: 'ready_timeout' | 'soft_deadline';
  readonly order?: { readonly order_id: number; readonly status: string; readonly ssh_connection: string | null };
  /** Epoch ms of the poll that found the order running: a lease counts from here. */
  readonly ready_at?: number;
}

/** Output of CancelOrder, at `$.cancel`. */
export interface CancelResult {
  readonly cancelled: boolean;
  readonly order_id?: number;
  /** Why nothing was cancelled: no order, already cancelled, or the marketplace no longer knows it. */
  readonly note?: 'no_order' | 'already_cancelled' | 'not_cancellable';
}

/** A failure the workflow caught: the error's name and its text (the workflow handlers read it from `$.error`). */
export interface CaughtError {
  readonly name: string;
  readonly message: string;
}

/** The workflow state document as it grows along the states. */
export interface WorkflowState extends CreateOrderWorkflowInput {
  readonly search?: SearchResult;
  readonly placement?: PlacementResult;
  readonly check?: CheckResult;
  readonly cancel?: CancelResult;
  readonly error?: CaughtError;
}

/** `timing.soft_deadline` is epoch seconds (set by the ingress); `now` is epoch ms. */
const softDeadlinePassed = (state: WorkflowState, now: number): boolean => now > state.timing.soft_deadline * 1000;

// ---------------------------------------------------------------- FindServer

export interface FindServerDeps {
  readonly marketplace: Pick<MarketplaceClient, 'listServers'>;
  readonly claims: ServerClaims;
  readonly tasks: Pick<TaskRepository, 'update'>;
}

/**
 * Picks the first matching server no other task holds, and claims it for this task. Servers a
 * previous attempt was rejected on are excluded. Throws NoServerAvailableError (business failure)
 * or SoftTimeoutError.
 */
export const findServer = async (state: WorkflowState, deps: FindServerDeps, now: number): Promise<SearchResult> => {
  if (softDeadlinePassed(state, now)) throw new SoftTimeoutError();
  const excluded = [...(state.search?.excluded ?? [])];
  if (state.placement?.retry && !excluded.includes(state.placement.server_id)) excluded.push(state.placement.server_id);
  const attempt = (state.search?.attempt ?? 0) + 1;
  await deps.tasks.update(state.task_id, { state: 'running' }, now);

  const { request } = state;
  const servers = await deps.marketplace.listServers();
  const matching = findMatchingServers(servers, {
    gpu_type: request.gpu_type,
    max_price: request.max_price,
    currency: request.currency,
    use_spot: request.use_spot,
    exclude: excluded,
  });
  // A leased order needs a server that may be rented that long (`mrl`, hours).
  const candidates = matching.filter((server) => serverFitsLease(server, request.max_hours));
  for (const server of candidates) {
    // A claim is a conditional write: a server another running task holds is skipped, so
    // "first match" means the first match nobody else is about to rent.
    if (await deps.claims.claim(server.id, state.task_id, now, CLAIM_TTL_SECONDS)) {
      const bid = request.use_spot ? spotBidFor(server, request.currency) : undefined;
      return {
        server: {
          id: server.id,
          gpu_array: [...server.gpu_array],
          price_usd: typeof server.price.usd.spot === 'number' ? server.price.usd.spot : null,
          ...(bid !== undefined ? { spot_bid: bid } : {}),
        },
        attempt,
        excluded,
      };
    }
  }
  throw new NoServerAvailableError(noMatchMessage(request.gpu_type, request.max_price));
};

// ---------------------------------------------------------------- ReserveQuota

export interface ReserveQuotaDeps {
  readonly quota: SlidingWindow;
}

/**
 * Counts this task's order against the account-wide hourly cap. The event id is the task id, so a
 * retried step or a second placement attempt of the same task counts once.
 */
export const reserveQuota = async (
  state: WorkflowState,
  deps: ReserveQuotaDeps,
  opts: { readonly now: number; readonly limit: number; readonly key: string },
): Promise<{ readonly count: number }> => {
  const hit = await deps.quota.hit(opts.key, { now: opts.now, windowMs: QUOTA_WINDOW_MS, limit: opts.limit, eventId: state.task_id });
  if (!hit.allowed) throw new QuotaExceededError(opts.limit);
  return { count: hit.count };
};

// ---------------------------------------------------------------- PlaceOrder

export interface PlaceOrderDeps {
  readonly marketplace: Pick<MarketplaceClient, 'createOrder' | 'listOrders'>;
  readonly tasks: Pick<TaskRepository, 'get' | 'update' | 'orderEnv'>;
  readonly claims: Pick<ServerClaims, 'release'>;
}

/** Rejections that mean "this server, not this request": search again without it. */
const SERVER_UNAVAILABLE = new Set(['server-already-rented', 'server-offline']);

/** Our newest order on `serverId` created at or after `sinceMs` (minus clock slack). */
export const findPlacedOrder = (orders: readonly Order[], serverId: number, sinceMs: number): Order | undefined => {
  const since = Math.floor(sinceMs / 1000) - RECONCILE_SLACK_SECONDS;
  return orders
    .filter((o) => o.renting_server === serverId && o.created >= since)
    .sort((a, b) => b.created - a.created || b.order_id - a.order_id)[0];
};

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

// ---------------------------------------------------------------- CheckOrder

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

// ---------------------------------------------------------------- CancelOrder

export interface CancelOrderDeps {
  /** listOrders finds an order whose create_order answer was lost (intent marker, no order id). */
  readonly marketplace: Pick<MarketplaceClient, 'cancelOrder'> & Partial<Pick<MarketplaceClient, 'listOrders'>>;
  readonly tasks: Pick<TaskRepository, 'get' | 'update'>;
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
  if (orderId === undefined && record?.server_id !== undefined && record.order_intent_at !== undefined && deps.marketplace.listOrders) {
    // create_order may have reached the marketplace with its answer lost, and PlaceOrder gave up
    // before it could reconcile: find that order (my_orders is the source of truth) so it does not
    // stay running after a failure result. A failing read propagates to the step's Retry.
    const found = findPlacedOrder(await deps.marketplace.listOrders({ returnCompleted: true }), record.server_id, record.order_intent_at);
    if (found) {
      orderId = found.order_id;
      await deps.tasks.update(taskId, { order_id: orderId }, now);
    }
  }
  if (orderId === undefined) return { cancelled: false, note: 'no_order' };
  if (record?.order_cancelled && record.order_id === orderId) return { cancelled: false, order_id: orderId, note: 'already_cancelled' };
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
  cancelTaskOrder(state.task_id, state.placement && !state.placement.retry ? state.placement.order_id : undefined, deps, now);

// ---------------------------------------------------------------- ReportResult

/** The spec's timeout text, with the configured readiness window. */
export const readyTimeoutMessage = (seconds: number): string => `Order creation timed out after ${seconds} s`;

/**
 * Readiness in Unix seconds: the poll that found the order running; for a state written before
 * CheckOrder recorded it, the placement (earlier, so a lease never runs longer than asked).
 */
const readyAtSeconds = (state: WorkflowState): number | undefined => {
  const ms = state.check?.ready_at ?? (state.placement && !state.placement.retry ? state.placement.placed_at : undefined);
  return ms === undefined ? undefined : Math.floor(ms / 1000);
};

/** The end of the order's lease (Unix seconds), when the request has one and the order is ready. */
export const workflowLeaseExpiresAt = (state: WorkflowState): number | undefined => {
  const readyAt = readyAtSeconds(state);
  return state.request.max_hours === undefined || readyAt === undefined ? undefined : leaseExpiresAt(readyAt, state.request.max_hours);
};

/** The task result the state document stands for. */
export const workflowResult = (state: WorkflowState): CreateOrderSuccess | FailureResult => {
  if (state.error) return failure(state.error.message);
  const check = state.check;
  if (check?.ready && check.order && state.search) {
    const leaseEnd = workflowLeaseExpiresAt(state);
    return {
      success: true,
      order_id: check.order.order_id,
      server_id: state.search.server.id,
      status: check.order.status,
      ssh_connection: check.order.ssh_connection ?? '',
      gpu: state.search.server.gpu_array,
      price_usd: state.search.server.price_usd,
      ...(leaseEnd !== undefined ? { lease_expires_at: leaseEnd } : {}),
    };
  }
  if (check?.timedOut) {
    return failure(check.reason === 'soft_deadline' ? new SoftTimeoutError().message : readyTimeoutMessage(state.timing.ready_timeout_seconds));
  }
  return failure('Order creation ended without a result');
};

export interface ReportResultDeps {
  readonly tasks: TaskRepository;
  readonly notifier: Notifier;
  readonly claims: Pick<ServerClaims, 'release'>;
  /** Where placed orders are recorded for the fleet watch (and their leases). */
  readonly leases: Pick<LeaseStore, 'track'>;
}

/**
 * Ends the task with its one result: records a ready order with the fleet watch (with its lease,
 * when the request has one), records the result, delivers the callback (only the winner of the final
 * write delivers), announces a ready order in chat and releases the server claim. Delivery failures
 * are the notifier's to log; they never fail the task.
 *
 * The order is recorded BEFORE the final write: a failing lease write fails the step, the state
 * machine retries it, and no result says "ready" about an order nobody guards. `track` is
 * idempotent (a retried step changes nothing), and the lease end is counted from `check.ready_at`,
 * so every attempt computes the same `lease_expires_at`.
 */
export const reportResult = async (
  state: WorkflowState,
  deps: ReportResultDeps,
  now: number,
): Promise<{ readonly success: boolean; readonly delivered: boolean; readonly result: TaskResult }> => {
  const result = workflowResult(state);
  if (result.success) {
    const { callback_url: callbackUrl, max_hours: maxHours, use_spot: spot } = state.request;
    await deps.leases.track(
      { order_id: result.order_id, task_id: state.task_id, ...(callbackUrl !== undefined ? { callback_url: callbackUrl } : {}), spot },
      {
        now: Math.floor(now / 1000),
        status: result.status,
        ...(result.lease_expires_at !== undefined && maxHours !== undefined ? { lease: { expires_at: result.lease_expires_at, hours: maxHours } } : {}),
      },
    );
  }
  const delivered = await completeTask(
    deps,
    { task_id: state.task_id, origin: state.origin, callback_url: state.request.callback_url },
    result,
    now,
  );
  if (delivered && result.success) await deps.notifier.chat(orderReadyText(result));
  if (state.search) await deps.claims.release(state.search.server.id, state.task_id);
  return { success: result.success, delivered, result };
};

// ---------------------------------------------------------------- ExecutionEnded (safety net)

export type EndedStatus = 'TIMED_OUT' | 'FAILED' | 'ABORTED';

export interface ExecutionEndedDeps extends CancelOrderDeps {
  readonly tasks: TaskRepository;
  readonly notifier: Notifier;
  readonly claims: Pick<ServerClaims, 'release'>;
}

/** The failure text of an execution that ended outside the workflow's own Catch. */
export const executionEndedMessage = (status: EndedStatus, hardLimitSeconds: number, cause?: string): string => {
  if (status === 'TIMED_OUT') return `Task timed out after ${hardLimitSeconds} s (hard limit)`;
  if (status === 'ABORTED') return 'Task aborted';
  return cause ? `Task failed: ${cause}` : 'Task failed';
};

/**
 * The safety net for executions that ended TIMED_OUT, FAILED or ABORTED: if the task has no result
 * yet, cancels its dangling order (best effort: a failed cancel is reported in the message rather
 * than blocking the result), then ends the task with a failure. Returns what it did.
 */
export const handleExecutionEnded = async (
  ended: { readonly taskId: string; readonly status: EndedStatus; readonly cause?: string; readonly origin?: WorkflowState['origin']; readonly callbackUrl?: string },
  deps: ExecutionEndedDeps,
  opts: { readonly now: number; readonly hardLimitSeconds: number; readonly onCancelError?: (error: unknown) => void },
): Promise<{ readonly action: 'none' | 'completed'; readonly cancel?: CancelResult; readonly delivered?: boolean }> => {
  const record = await deps.tasks.get(ended.taskId);
  if (!record || FINAL_STATES.includes(record.state)) return { action: 'none' };
  let cancel: CancelResult | undefined;
  let message = executionEndedMessage(ended.status, opts.hardLimitSeconds, ended.cause);
  try {
    cancel = await cancelTaskOrder(ended.taskId, undefined, deps, opts.now);
  } catch (error) {
    opts.onCancelError?.(error);
    message += `; order ${record.order_id} could not be cancelled`;
  }
  const callbackUrl = ended.callbackUrl ?? (typeof record.request.callback_url === 'string' ? record.request.callback_url : undefined);
  const delivered = await completeTask(
    deps,
    { task_id: ended.taskId, origin: ended.origin ?? record.origin, callback_url: callbackUrl },
    failure(message),
    opts.now,
  );
  if (record.server_id !== undefined) await deps.claims.release(record.server_id, ended.taskId);
  return { action: 'completed', cancel, delivered };
};
