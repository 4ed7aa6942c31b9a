/**
 * The queued jobs (cancel-order, status, price-alert, extend-order, set-spot-price) and their retry policy. Pure use cases: the
 * ports arrive as one deps object and time arrives as `now` (epoch ms). The SQS worker
 * (lambdas/handlers/worker/job-worker.ts) runs them and maps the retry policy onto SQS.
 */
import { RETRY_POLICY, retryDelaySecondsAfter } from '../../../contract/retry-policy';
import { createHash } from 'node:crypto';
import { SOFT_TIME_LIMIT_SECONDS } from '../../../contract/limits';
import { orderCancelledText, priceAlertMatchedText } from './chat-messages';
import {
  keyNameOf,
  mayTouchOrder,
  notYourOrderText,
  notYourTaskText,
  seesAllOrders,
  type TaskCaller,
} from '../teams/caller-keys';
import { callerSafeText, isBusinessOutcome, MarketplaceInvalidInputError, TaskAlreadyExistsError } from '../errors';
import { extendOrder, setSpotPrice, type ExtensionSpend } from '../leases/lease-jobs';
import { hasLease, serverFitsLease } from '../leases/lease';
import type { LeaseBook } from '../leases/lease-ports';
import { findMatchingServer, type HostFilters } from '../hosts/matching';
import { workflowOrigin, workflowRequest } from './accept-task';
import type { Order, PortProtocol, Server } from '../marketplace-types';
import type {
  CreateOrderWorkflowInput,
  MarketplaceClient,
  Notifier,
  TaskRepository,
  WaitingCaps,
  WaitingTasks,
  WorkflowStarter,
} from '../ports';
import { runCancelTask } from '../recovery/standing-orders';
import { waitingEntry } from '../recovery/waiting-entry';
import { standingTiming } from './accept-task';
import type {
  CancelOrderInput,
  CancelSuccess,
  CreateOrderInput,
  FailureResult,
  JobMessage,
  PriceAlertInput,
  PriceAlertMatched,
  PriceNotMet,
  StatusInput,
  StatusResult,
  TaskOrigin,
  TaskRecord,
  TaskRequest,
  TaskResult,
} from '../task';
import { failure } from '../task';

/** Settings the jobs take from configuration (env contract), so the domain reads no environment. */
export interface JobConfig {
  readonly defaultCurrency: string;
  readonly defaultPorts: Readonly<Record<string, PortProtocol>>;
  readonly pollIntervalSeconds: number;
  readonly readyTimeoutSeconds: number;
  /** @default SOFT_TIME_LIMIT_SECONDS (300) */
  readonly softTimeLimitSeconds?: number;
  /** DEFAULT_MAX_HOURS: the lease of a create-order a matched price alert queues. @default no lease */
  readonly defaultMaxHours?: number;
}

/** Everything a job needs from the outside world. */
export interface JobDeps {
  readonly marketplace: MarketplaceClient;
  readonly tasks: TaskRepository;
  readonly notifier: Notifier;
  readonly workflow: WorkflowStarter;
  /** Leases and watched orders (issue 14): extend-order, set-spot-price, and lease ends in status. */
  readonly leases: Pick<
    LeaseBook,
    'get' | 'getMany' | 'extend' | 'claimSpotDecrease' | 'releaseSpotDecrease' | 'cancelled'
  >;
  readonly config: JobConfig;
  /** The standing-order queue (issue 23): cancel-task. */
  readonly waiting?: Pick<WaitingTasks, 'get' | 'remove'>;
  /**
   * The waiting queue's caps (issue 38 §1): a price alert's create-order with `wait_seconds` is
   * admitted like any standing order (acceptTask) before it is recorded, or the alert fails with the
   * cap's text. Absent: not capped.
   */
  readonly standing?: { readonly waiting: Pick<WaitingTasks, 'admit' | 'remove'>; readonly caps: WaitingCaps };
  /** Spending budgets (issue 24): extend-order reserves its hours first. */
  readonly spend?: ExtensionSpend;
  /**
   * Epoch ms, read when a job records a moment after a marketplace call: the end of a cancelled
   * order's time held is when cancel_order answered, not when the job began (the call may first wait
   * for its pacing slot, seconds at a widened interval). Absent: the job's start.
   */
  readonly clock?: () => number;
}

/** Which job a message is and when it runs. */
export interface JobContext {
  readonly task_id: string;
  readonly origin: TaskOrigin;
  /** Epoch ms. */
  readonly now: number;
}

export { SOFT_TIME_LIMIT_SECONDS };
/** Retries after the first attempt (contract/retry-policy.ts): attempts 1..4, then the failure result. */
export const MAX_JOB_RETRIES = RETRY_POLICY.retries;

// ---- Retry policy --------------------------------------------------------------------------

/**
 * Delay before the next attempt, in seconds: 2^retry, where retry = the receive count of the attempt
 * that just failed (1st failure → 2 s, 2nd → 4 s, 3rd → 8 s), as the spec's `2 ** retries` countdown.
 */
export const retryDelaySeconds = (receiveCount: number): number => retryDelaySecondsAfter(receiveCount);

/** True on the 4th receive (after the 3rd retry): a failure now ends the task with the failure result. */
export const isFinalAttempt = (receiveCount: number): boolean => receiveCount >= MAX_JOB_RETRIES + 1;

/**
 * Whether a failed attempt may be retried: every exception except a named business outcome
 * (BUSINESS_ERROR_NAMES, the list the state machine's Retry uses too). A job that ran past its soft
 * limit is one: retrying it would spend up to 3 more soft limits on work that is already too slow.
 */
export const isRetryable = (error: unknown): boolean => !isBusinessOutcome(error);

/** The failure text sent to the caller: the exception text, as the spec's tasks report it. */
export const errorText = (error: unknown): string =>
  error instanceof Error && error.message
    ? callerSafeText(error.name, error.message)
    : typeof error === 'string' && error
      ? error
      : 'Unknown error';

const formatUsd = (price: number | undefined): string =>
  typeof price === 'number' ? `$${price}` : 'an unstated price';

/** The GPU description of a server for messages: the spec string, else the card list. */
const gpuLabel = (server: Server): string => server.specs.gpu || server.gpu_array.join(', ') || `server ${server.id}`;

// ---- cancel-order --------------------------------------------------------------------------

/**
 * Cancels an order on the marketplace, records the moment it answered on the order's record (the
 * ledger settles to it, not to the sweep that sees the order gone: issue 38 §9) and tells the chat.
 * `now` is the job's start, epoch ms (the moment when `deps.clock` is absent).
 */
export const runCancel = async (
  input: CancelOrderInput,
  deps: Pick<JobDeps, 'marketplace' | 'notifier' | 'clock'> & { readonly leases?: Pick<LeaseBook, 'cancelled'> },
  now: number,
): Promise<CancelSuccess> => {
  try {
    await deps.marketplace.cancelOrder(input.order_id);
  } catch (error) {
    // A retry after an attempt whose answer was lost (the order WAS cancelled) is told "invalid
    // input". my_orders is the source of truth: an order that shows as ended is what was asked for;
    // one it does not list at all is not this account's (a typo, another account's id).
    if (!(error instanceof MarketplaceInvalidInputError)) throw error;
    const listed = await listedOrder(input.order_id, deps);
    if (!listed) throw new MarketplaceInvalidInputError(notAccountOrderText(input.order_id));
    if (listed.status !== 'expired') throw error;
  }
  // After the marketplace call: a cancel that failed must not end the order's time held early, and
  // the order is billed until the marketplace took the cancel.
  if (deps.leases) await deps.leases.cancelled(input.order_id, (deps.clock?.() ?? now) / 1000);
  await deps.notifier.chat(orderCancelledText(input.order_id));
  return { success: true, order_id: input.order_id, status: 'cancelled' };
};

/** The order as my_orders lists it (completed ones included, a fresh read), or undefined. */
const listedOrder = async (orderId: number, deps: Pick<JobDeps, 'marketplace'>): Promise<Order | undefined> =>
  (await deps.marketplace.listOrders({ returnCompleted: true })).find((o) => o.order_id === orderId);

/** cancel-order of an id my_orders does not list (issue 28). */
export const notAccountOrderText = (orderId: number): string => `order ${orderId} is not one of this account's orders`;

// ---- status --------------------------------------------------------------------------------

/**
 * Summarizes orders: `active` counts `running`, `creating` counts `creating_order` (the spec's
 * counts); `ssh` is the order's ready ssh command line, or null while it has none.
 */
export const summarizeOrders = (orders: readonly Order[]): StatusResult => ({
  total_orders: orders.length,
  active: orders.filter((o) => o.status === 'running').length,
  creating: orders.filter((o) => o.status === 'creating_order').length,
  orders: orders.map((o) => ({ order_id: o.order_id, status: o.status, ssh: o.connection?.ssh ?? null })),
});

/**
 * Lists the account's orders through my_orders. Decision: completed orders are NOT included
 * (my_orders without return_completed). The result counts what is live now ("active"/"creating");
 * completed orders cannot be acted on, and including them would make total_orders grow without
 * bound over the account's lifetime.
 */
export const runStatus = async (
  _input: StatusInput,
  deps: Pick<JobDeps, 'marketplace' | 'leases'>,
  caller?: TaskCaller,
): Promise<StatusResult> => {
  const orders = await deps.marketplace.listOrders({ returnCompleted: false });
  if (orders.length === 0) return summarizeOrders(orders);
  // Leased orders show when the relay cancels them; an ended lease no longer applies.
  const tracked = await deps.leases.getMany(orders.map((o) => o.order_id));
  // A key that does not see every order counts and lists only those its tasks placed (issue 24).
  const summary = summarizeOrders(
    seesAllOrders(caller) ? orders : orders.filter((o) => mayTouchOrder(caller, tracked.get(o.order_id)?.key)),
  );
  if (summary.orders.length === 0) return summary;
  return {
    ...summary,
    orders: summary.orders.map((o) => {
      const record = tracked.get(o.order_id);
      return hasLease(record) && !record.ended ? { ...o, lease_expires_at: record.expires_at } : o;
    }),
  };
};

// ---- price-alert ---------------------------------------------------------------------------

/** The fixed namespace of create-order task ids derived from a price alert (UUIDv5). */
const PRICE_ALERT_NAMESPACE = '6f0e3c52-4d1a-5b9e-8c7d-2a4b6e8f0a1c';

/**
 * The create-order task id a price alert starts: a UUIDv5 of the alert's task id, so a retried
 * alert finds the task it already created instead of placing a second order.
 */
export const priceAlertOrderTaskId = (alertTaskId: string): string => {
  const namespace = Buffer.from(PRICE_ALERT_NAMESPACE.replace(/-/g, ''), 'hex');
  const hash = createHash('sha1').update(namespace).update(`create-order:${alertTaskId}`, 'utf8').digest();
  hash[6] = (hash[6] & 0x0f) | 0x50; // version 5
  hash[8] = (hash[8] & 0x3f) | 0x80; // RFC 4122 variant
  const hex = hash.subarray(0, 16).toString('hex');
  return `${hex.slice(0, 8)}-${hex.slice(8, 12)}-${hex.slice(12, 16)}-${hex.slice(16, 20)}-${hex.slice(20)}`;
};

export const PRICE_NOT_MET = 'Price not met';

/** The host filters (issue 31 §1) of an input, without absent fields. */
const hostFiltersOf = (input: HostFilters): HostFilters => ({
  ...(input.min_reliability !== undefined ? { min_reliability: input.min_reliability } : {}),
  ...(input.min_rating !== undefined ? { min_rating: input.min_rating } : {}),
  ...(input.min_rating_count !== undefined ? { min_rating_count: input.min_rating_count } : {}),
  ...(input.exclude_servers !== undefined ? { exclude_servers: input.exclude_servers } : {}),
});

/**
 * A single price check (not a watch). When a server matches `gpu_type` at or under `target_price`
 * (the workflow's matching rules, spot, default currency), a create-order task is recorded (queued),
 * its workflow started (spot, max_price = target_price, same image and callback_url) and the chat
 * told; otherwise the result is `{success:false, message:'Price not met'}`.
 */
export const runPriceAlert = async (
  input: PriceAlertInput,
  deps: JobDeps,
  ctx: JobContext,
): Promise<PriceAlertMatched | PriceNotMet | FailureResult> => {
  const orderTaskId = priceAlertOrderTaskId(ctx.task_id);
  const currency = deps.config.defaultCurrency;
  const maxHours = deps.config.defaultMaxHours;
  // The order the alert queues depends on the alert and the settings only, not on the server that matched.
  const request: CreateOrderInput = {
    gpu_type: input.gpu_type,
    max_price: input.target_price,
    image: input.image,
    currency,
    ports: deps.config.defaultPorts,
    use_spot: true,
    ...(maxHours !== undefined ? { max_hours: maxHours } : {}),
    ...(input.callback_url ? { callback_url: input.callback_url } : {}),
    ...(input.wait_seconds ? { wait_seconds: input.wait_seconds } : {}),
    ...hostFiltersOf(input),
  };
  // callback_url and a Slack response_url stay in the record (the workflow's deliverers read them there).
  const workflowInput = (createdMs: number): CreateOrderWorkflowInput => ({
    task_id: orderTaskId,
    request: workflowRequest(request),
    origin: workflowOrigin(ctx.origin),
    timing: {
      poll_interval_seconds: deps.config.pollIntervalSeconds,
      ready_timeout_seconds: deps.config.readyTimeoutSeconds,
      soft_deadline: Math.floor(createdMs / 1000) + (deps.config.softTimeLimitSeconds ?? SOFT_TIME_LIMIT_SECONDS),
      ...standingTiming(input.wait_seconds, createdMs),
    },
  });

  // A retry after the create-order task was recorded must not start a second order. If the task is
  // still queued, the attempt that recorded it may have stopped before starting its workflow (a crash,
  // a timeout): start it now. A start is idempotent by name (the task id), so a workflow that is
  // running or done is not started twice.
  const existing = await deps.tasks.get(orderTaskId);
  if (existing) {
    if (existing.state === 'queued')
      await deps.workflow.start(orderTaskId, workflowInput(Date.parse(existing.created_at)));
    return {
      success: true,
      message: `Price alert matched; create-order task ${orderTaskId} already queued`,
      task_id: orderTaskId,
    };
  }

  const servers = await deps.marketplace.listServers();
  // The queued create-order gets the default lease, so the alert only matches servers that allow it.
  const leasable = servers.filter((s) => serverFitsLease(s, maxHours));
  const server = findMatchingServer(leasable, {
    gpu_type: input.gpu_type,
    max_price: input.target_price,
    currency,
    use_spot: true,
    ...hostFiltersOf(input),
  });
  if (!server) return { success: false, message: PRICE_NOT_MET };

  // A standing order takes its place under the waiting queue's caps first (issue 38 §1), as at the
  // API: over a cap nothing is recorded and the alert fails with the cap's text.
  const admitted = input.wait_seconds && deps.standing ? waitingEntry(workflowInput(ctx.now), 0) : undefined;
  if (admitted !== undefined && deps.standing) {
    const refusal = await deps.standing.waiting.admit(admitted, deps.standing.caps);
    if (refusal !== undefined) return failure(refusal);
  }
  const giveBack = async (): Promise<void> => {
    if (admitted !== undefined && deps.standing)
      await deps.standing.waiting.remove(orderTaskId, 0).catch(() => undefined);
  };

  const nowIso = new Date(ctx.now).toISOString();
  // The alert's sealed Jupyter token (issue 37) goes with the order, still sealed.
  const sealedAccess = await deps.tasks.sealedAccess?.(ctx.task_id);
  const record: TaskRecord = {
    task_id: orderTaskId,
    kind: 'create-order',
    state: 'queued',
    request: {
      ...request,
      price_alert_task_id: ctx.task_id,
      ...(sealedAccess !== undefined ? { access_sealed: ['jupyter_token'] } : {}),
    },
    origin: ctx.origin,
    created_at: nowIso,
    updated_at: nowIso,
  };
  let created = false;
  try {
    await deps.tasks.create(record, sealedAccess !== undefined ? { sealedAccess } : undefined);
    created = true;
  } catch (error) {
    // The id is this alert's own: "already exists" means this attempt's write landed and only its
    // answer was lost (the SDK retried the put after a timeout) or a concurrent delivery of the same
    // job recorded it. Either way the task is this alert's; starting it is idempotent by name.
    if (!(error instanceof TaskAlreadyExistsError)) {
      await giveBack();
      throw error;
    }
  }
  try {
    await deps.workflow.start(orderTaskId, workflowInput(ctx.now));
  } catch (error) {
    // No queued task may exist without work behind it; the retry creates it again. A record this
    // call did not see itself create may be a concurrent delivery's, whose workflow may be running:
    // it stays, and the retry (which finds it queued) starts it.
    if (created) {
      await deps.tasks.remove(orderTaskId);
      await giveBack();
    }
    throw error;
  }

  const gpu = gpuLabel(server);
  const price = server.price.usd_per_hour.spot;
  await deps.notifier.chat(priceAlertMatchedText(gpu, price, input.target_price, orderTaskId));
  return {
    success: true,
    message: `Price alert matched: ${gpu} at ${formatUsd(price)}/hr (target $${input.target_price}/hr); create-order task ${orderTaskId} queued`,
    task_id: orderTaskId,
  };
};

// ---- dispatch ------------------------------------------------------------------------------

/**
 * Issue 24: a key that does not see every order may cancel, extend and re-price only orders its own
 * tasks placed (the lease book records the placing key); issue 29: and cancel only standing orders
 * (tasks) it made itself (the task record's origin names the key). The refusal is the task's failure
 * result; nothing reaches the marketplace or the waiting queue.
 */
const ownershipRefusal = async (
  message: TypedJobMessage,
  deps: Pick<JobDeps, 'leases' | 'tasks'>,
): Promise<TaskResult | undefined> => {
  const caller = message.origin.caller;
  if (seesAllOrders(caller)) return undefined;
  if (message.kind === 'cancel-task') {
    const owner = (await deps.tasks.get(message.input.task_id))?.origin.caller?.key;
    return mayTouchOrder(caller, owner)
      ? undefined
      : failure(notYourTaskText(message.input.task_id, keyNameOf(caller)));
  }
  if (message.kind !== 'cancel-order' && message.kind !== 'extend-order' && message.kind !== 'set-spot-price')
    return undefined;
  const orderId = message.input.order_id;
  const tracked = await deps.leases.get(orderId);
  return mayTouchOrder(caller, tracked?.key) ? undefined : failure(notYourOrderText(orderId, keyNameOf(caller)));
};

/** A JobMessage whose input is narrowed by its kind (what the worker's schema produces): a queued TaskRequest. */
export type TypedJobMessage = JobMessage & Exclude<TaskRequest, { readonly kind: 'create-order' }>;

/** Runs the job a message names. Throws what the job throws; the caller applies the retry policy. */
export const runJob = async (message: TypedJobMessage, deps: JobDeps, now: number): Promise<TaskResult> => {
  const refusal = await ownershipRefusal(message, deps);
  if (refusal) return refusal;
  switch (message.kind) {
    case 'cancel-order':
      return runCancel(message.input, deps, now);
    case 'status':
      return runStatus(message.input, deps, message.origin.caller);
    case 'price-alert':
      return runPriceAlert(message.input, deps, { task_id: message.task_id, origin: message.origin, now });
    // Business refusals come back as failure results; transient errors are thrown for the retry.
    case 'extend-order':
      return extendOrder(
        message.input,
        { task_id: message.task_id, now: Math.floor(now / 1000), relayWide: seesAllOrders(message.origin.caller) },
        deps,
      );
    case 'set-spot-price':
      return setSpotPrice(
        message.input,
        {
          now: Math.floor(now / 1000),
          at: now / 1000,
          task_id: message.task_id,
          relayWide: seesAllOrders(message.origin.caller),
        },
        deps,
      );
    case 'cancel-task':
      if (!deps.waiting) throw new Error('cancel-task needs the standing-order queue');
      return runCancelTask(message.input, { waiting: deps.waiting, tasks: deps.tasks, notifier: deps.notifier }, now);
  }
};
