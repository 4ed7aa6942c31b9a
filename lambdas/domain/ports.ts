/** Ports: what the domain needs from the outside world, in domain words. Adapters implement them. */
import type { CreateOrderRequest, Order, Server, Wallet } from './marketplace-types';
import type { JobMessage, TaskRecord, TaskResult, TaskState, CreateOrderInput, TaskOrigin } from './task';

/** The marketplace API (lambdas/marketplace implements it over HTTP). */
export interface MarketplaceClient {
  listServers(): Promise<readonly Server[]>;
  listWallets(): Promise<readonly Wallet[]>;
  /** Never retried blindly. Throws OrderOutcomeUnknownError when the request may have reached the marketplace. Returns undefined when the answer carried no order_id. */
  createOrder(request: CreateOrderRequest): Promise<{ order_id: number | undefined }>;
  listOrders(options?: { returnCompleted?: boolean }): Promise<readonly Order[]>;
  cancelOrder(orderId: number): Promise<void>;
  setSpotPrice(orderId: number, desiredPrice: number): Promise<void>;
  spotMarket(serverId: number): Promise<unknown>;
}

/**
 * Shared pacing of marketplace calls: at most one call per interval per API key, across every
 * concurrent caller. `acquire` resolves with the time (ms) at which the caller may send.
 */
export interface PacingGate {
  acquire(keyId: string, intervalMs: number, now: number): Promise<number>;
  /**
   * A slot that is also `lane.spacingMs` after the previous slot of the same lane (create_order: one
   * per 5 s). Calls outside the lane keep getting their slots while a lane call waits. Resolves
   * undefined, claiming nothing, when the slot would lie more than `lane.maxWaitMs` ahead.
   */
  acquireInLane(keyId: string, intervalMs: number, now: number, lane: PacingLaneRequest): Promise<number | undefined>;
}

/** A pacing lane: calls sharing a name are spaced `spacingMs` apart on top of the key's interval. */
export interface PacingLaneRequest {
  readonly name: string;
  readonly spacingMs: number;
  readonly maxWaitMs?: number;
}

/** A rolling window of events under one key (rate limit per address, hourly order quota). */
export interface SlidingWindow {
  /**
   * Records one event at `now` when fewer than `limit` events lie in (now - windowMs, now].
   * `eventId` makes it idempotent: recording the same id twice counts once.
   */
  hit(key: string, opts: { now: number; windowMs: number; limit: number; eventId: string }): Promise<{ allowed: boolean; retryAfterMs: number; count: number }>;
}

export interface TaskRepository {
  /**
   * Creates the record in state queued. Fails if the id exists. `sealed` holds what must never be in
   * the record as read by `get` (nor in the workflow input): the create-order container env values.
   */
  create(record: TaskRecord, sealed?: SealedTaskInput): Promise<void>;
  get(taskId: string): Promise<TaskRecord | undefined>;
  /** The container env stored by `create` (PlaceOrder reads it); undefined once the task is final. */
  orderEnv?(taskId: string): Promise<Readonly<Record<string, string>> | undefined>;
  /** Moves a non-final task to `state` (running) and merges fields like order_id. */
  update(taskId: string, fields: { state?: TaskState; order_id?: number; server_id?: number; order_intent_at?: number; order_cancelled?: boolean }, now: number): Promise<void>;
  /**
   * Records the final result once. Returns true for the one caller that moved the task to a final
   * state, false when it was already final: only that caller delivers the result. `finisher` names a
   * caller that stays the same across its own retries (the workflow's ReportResult of this task): if
   * an earlier attempt's final write landed but its answer never arrived, the retry is still the
   * winner and delivers — unless `markDelivered` recorded that the result went out. Without it, every
   * call is a finisher of its own.
   */
  finish(taskId: string, state: 'succeeded' | 'failed', result: TaskResult, now: number, finisher?: string): Promise<boolean>;
  /** Records that a named finisher's result went out, so a later retry of that finisher does not deliver it again. */
  markDelivered(taskId: string, now: number): Promise<void>;
  /** Removes a record whose hand-off failed, so no queued task exists without work behind it. */
  remove(taskId: string): Promise<void>;
}

/** What a task keeps beside its record until it ends: values too secret for logs, history or events. */
export interface SealedTaskInput {
  readonly orderEnv?: Readonly<Record<string, string>>;
}

/** Starts the create-order workflow (Step Functions execution named by task id). */
export interface WorkflowStarter {
  start(taskId: string, input: CreateOrderWorkflowInput): Promise<void>;
}

/** Sends a job to the queue. */
export interface JobQueue {
  send(message: JobMessage): Promise<void>;
}

/**
 * The create-order request as the workflow carries it: without callback_url, and `env` is never set by
 * the relay. Both stay out of the execution history (kept 90 days) and EventBridge events: env values
 * are sealed beside the task record (PlaceOrder reads them with `TaskRepository.orderEnv`), and the
 * deliverers (ReportResult, ExecutionEnded) read callback_url from the record.
 */
export type WorkflowOrderRequest = Omit<CreateOrderInput, 'callback_url'> & { readonly callback_url?: never };

/** The task origin as the workflow carries it: without Slack's response_url (read from the record). */
export type WorkflowOrigin = Pick<TaskOrigin, 'source'> & { readonly responseUrl?: never };

/** The workflow's input document: no secret values and no caller URLs (see WorkflowOrderRequest). */
export interface CreateOrderWorkflowInput {
  readonly task_id: string;
  readonly request: WorkflowOrderRequest;
  readonly origin: WorkflowOrigin;
  /** Timing from config, so Wait states and deadlines follow the environment. `soft_deadline` is epoch seconds. */
  readonly timing: { readonly poll_interval_seconds: number; readonly ready_timeout_seconds: number; readonly soft_deadline: number };
}

/** Claims a server for one task so concurrent tasks never race for it. */
export interface ServerClaims {
  claim(serverId: number, taskId: string, now: number, ttlSeconds: number): Promise<boolean>;
  release(serverId: number, taskId: string): Promise<void>;
}

/** Outbound deliveries: callback_url, Slack ({text}) and Discord ({content}). Failures are logged, never thrown. */
export interface Notifier {
  callback(url: string, taskId: string, result: TaskResult): Promise<boolean>;
  chat(text: string): Promise<void>;
  slackResponse?(responseUrl: string, text: string): Promise<void>;
}

export type { TaskResult };

/** Idempotency keys (hardening issue): the first request with a key wins; repeats within 24 h get its task id. */
export interface IdempotencyStore {
  /** Stores key → taskId unless the key is known and unexpired; returns the task id now bound to the key. */
  claim(key: string, taskId: string, now: number, ttlSeconds: number): Promise<string>;
  release(key: string, taskId: string): Promise<void>;
}
