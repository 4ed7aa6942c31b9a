/** Tasks: what a caller asked for, where it stands, and how it ended. */
import type { OrderAccess } from './access/order-access';
import * as z from 'zod/mini';
import { TaskCallerSchema } from './teams/caller-keys';
import { builtOnFirstUse } from './zod-texts';
import type { PortProtocol } from './marketplace-types';

// The stored shapes' schemas below are built on first use (builtOnFirstUse): only code that reads a
// stored task, a workflow state or a job message parses with them, never an accept route.
export const TASK_KINDS = [
  'create-order',
  'cancel-order',
  'status',
  'price-alert',
  'extend-order',
  'set-spot-price',
  'cancel-task',
] as const;
export const TaskKindSchema = builtOnFirstUse(() => z.enum(TASK_KINDS));
export type TaskKind = (typeof TASK_KINDS)[number];
/** `waiting`: a standing order (issue 23) with no server yet, served by the fleet watch until its wait ends. */
const TASK_STATES = ['queued', 'running', 'waiting', 'succeeded', 'failed'] as const;
export const TaskStateSchema = builtOnFirstUse(() => z.enum(TASK_STATES));
export type TaskState = (typeof TASK_STATES)[number];
export const FINAL_STATES: readonly TaskState[] = ['succeeded', 'failed'];

/** Where a task came from; decides where its result goes besides callback_url. */
export const TaskOriginSchema = builtOnFirstUse(() =>
  z.object({
    source: z.enum(['webhook', 'slack']),
    /** Slack's response_url for a slash command (hardening issue). */
    responseUrl: z.optional(z.string().check(z.minLength(1))),
    /** The caller key the request was signed with (issue 24); absent = the default key (shared webhook secret). */
    caller: z.optional(TaskCallerSchema()),
  }),
);
export type TaskOrigin = Readonly<z.infer<ReturnType<typeof TaskOriginSchema>>>;

/** The host filters (issue 31 §1) as stored inputs carry them: the workflow state and the job message. */
export const HostFilterShape = builtOnFirstUse(() => ({
  min_reliability: z.optional(z.number().check(z.gte(0), z.lte(1))),
  min_rating: z.optional(z.number().check(z.gte(0), z.lte(5))),
  min_rating_count: z.optional(z.int().check(z.positive())),
  exclude_servers: z.optional(z.array(z.int())),
}));

/** Normalized create-order input: request plus defaults from config. This is the workflow input's `request`. */
export interface CreateOrderInput {
  readonly gpu_type: string;
  readonly max_price?: number;
  readonly image: string;
  readonly currency: string;
  readonly ports: Readonly<Record<string, PortProtocol>>;
  readonly env?: Readonly<Record<string, string>>;
  readonly use_spot: boolean;
  readonly callback_url?: string;
  /** Lease in hours (the request's max_hours, else DEFAULT_MAX_HOURS); absent = no lease. */
  readonly max_hours?: number;
  /** Standing order (issue 23): how long the task may wait for a matching server, in seconds; absent or 0 = fail at once. */
  readonly wait_seconds?: number;
  /** Outbid recovery (issue 23, on-outbid.ts); absent = notify. */
  readonly on_outbid?: 'rebid' | 'replace' | 'rebid_then_replace';
  /**
   * false (issue 28): callback_url receives the task's result only, not the order's later lifecycle
   * events (the CLI's --wait listener, which is gone once the result arrived). Absent = events too.
   */
  readonly lifecycle_events?: false;
  /** Host filters (issue 31 §1), the request's or the relay's defaults; absent = no filter. */
  readonly min_reliability?: number;
  readonly min_rating?: number;
  readonly min_rating_count?: number;
  readonly exclude_servers?: readonly number[];
  /** Which match is rented (issue 31 §3); absent = `first`. */
  readonly prefer?: 'cheapest' | 'reliable';
  /**
   * Access (issue 37): the caller's public key line (absent: the caller key's stored one, resolved at
   * placement). The password, the Jupyter token and the start-up script are sealed beside the record
   * at acceptance (never in the record as read, nor in the workflow input; see sealRequest).
   */
  readonly ssh_public_key?: string;
  readonly ssh_password?: string;
  readonly jupyter_token?: string;
  readonly command?: string;
}
export interface CancelOrderInput {
  readonly order_id: number;
  readonly callback_url?: string;
}
/** cancel-task (issue 23): ends a waiting standing order with a result. */
export interface CancelTaskInput {
  readonly task_id: string;
  readonly callback_url?: string;
}
export interface StatusInput {
  readonly callback_url?: string;
}
export interface PriceAlertInput {
  readonly gpu_type: string;
  readonly target_price: number;
  readonly image: string;
  readonly callback_url?: string;
  /** The queued create-order's `wait_seconds` (issue 23). */
  readonly wait_seconds?: number;
  /** Host filters (issue 31 §1), for the check and the queued create-order. */
  readonly min_reliability?: number;
  readonly min_rating?: number;
  readonly min_rating_count?: number;
  readonly exclude_servers?: readonly number[];
  /**
   * The queued order's Jupyter token (issue 37 §1), drawn at acceptance when DEFAULT_PORTS maps an
   * http port: sealed beside the alert's record (never in the job message), copied sealed into the
   * create-order task the alert queues.
   */
  readonly jupyter_token?: string;
}

/** Task inputs of the two new job kinds (what the queue carries). */
export interface ExtendOrderInput {
  readonly order_id: number;
  readonly hours: number;
  readonly callback_url?: string;
}
export interface SetSpotPriceInput {
  readonly order_id: number;
  readonly desired_price: number;
  readonly callback_url?: string;
}

/** Results of the two new job kinds (FailureResult otherwise). */
export interface ExtendOrderSuccess {
  readonly success: true;
  readonly order_id: number;
  readonly lease_expires_at: number;
}
/**
 * `desired_price` is in the marketplace's unit (`currency` per day); `desired_price_usd_per_hour` is the
 * same price in USD per hour at the server's rates, null when the listing does not state them.
 */
export interface SetSpotPriceSuccess {
  readonly success: true;
  readonly order_id: number;
  readonly desired_price: number;
  readonly currency: string;
  readonly desired_price_usd_per_hour: number | null;
}

export type TaskRequest =
  | { readonly kind: 'create-order'; readonly input: CreateOrderInput }
  | { readonly kind: 'cancel-order'; readonly input: CancelOrderInput }
  | { readonly kind: 'status'; readonly input: StatusInput }
  | { readonly kind: 'price-alert'; readonly input: PriceAlertInput }
  | { readonly kind: 'extend-order'; readonly input: ExtendOrderInput }
  | { readonly kind: 'set-spot-price'; readonly input: SetSpotPriceInput }
  | { readonly kind: 'cancel-task'; readonly input: CancelTaskInput };

/** Results, exactly as order-relay.md §2.3 shapes them. */
export interface CreateOrderSuccess {
  readonly success: true;
  readonly order_id: number;
  readonly server_id: number;
  readonly status: string;
  readonly ssh_connection: string;
  readonly gpu: readonly string[];
  readonly price_usd: number | null;
  /**
   * What the order was placed at, in USD per hour (issue 38 §8): a spot order's bid, min(1.1 × spot,
   * max_price), or the on-demand price. Absent when the server states no USD rate for the order's coin.
   */
  readonly bid_usd_per_hour?: number;
  /** bid_usd_per_hour with the renter fee (RENTER_FEE_PERCENT), when the relay is configured with one. */
  readonly all_in_usd_per_hour?: number;
  /** Unix seconds at which the relay cancels the order (a leased order only), counted from readiness. */
  readonly lease_expires_at?: number;
  /** Why this server was chosen (issue 31 §3): `cheapest of 7 matches at $0.31/h`. */
  readonly chosen?: string;
  /** READINESS_PROBE=ssh-login (issue 31 §4): the host key's SHA-256 fingerprint seen at login. */
  readonly ssh_host_key_sha256?: string;
  /**
   * How to get in (issue 37 §4): ssh (host, port, user, command, the pinned host key and its
   * known_hosts line), the http ports' URLs and Jupyter's. The stored result never holds the Jupyter
   * token: the signed result and the task's own key get it from its seal.
   */
  readonly access?: OrderAccess;
}
export interface CancelSuccess {
  readonly success: true;
  readonly order_id: number;
  readonly status: 'cancelled';
}
/** A waiting standing order that cancel-task ended. */
export interface CancelTaskSuccess {
  readonly success: true;
  readonly task_id: string;
  readonly state: 'cancelled';
}
export interface StatusResult {
  readonly total_orders: number;
  readonly active: number;
  readonly creating: number;
  readonly orders: readonly {
    readonly order_id: number;
    readonly status: string;
    readonly ssh: string | null;
    /** Leased orders only: when the relay cancels the order (Unix seconds). */
    readonly lease_expires_at?: number;
  }[];
}
export interface PriceAlertMatched {
  readonly success: true;
  readonly message: string;
  readonly task_id: string;
}
export interface PriceNotMet {
  readonly success: false;
  readonly message: string;
}
export interface FailureResult {
  readonly success: false;
  readonly error: string;
}

export type TaskResult =
  | CreateOrderSuccess
  | CancelSuccess
  | CancelTaskSuccess
  | StatusResult
  | PriceAlertMatched
  | PriceNotMet
  | ExtendOrderSuccess
  | SetSpotPriceSuccess
  | FailureResult;

export const failure = (error: string): FailureResult => ({ success: false, error });

/** A task record as stored (DynamoDB) and as returned by GET /webhook/tasks/{id}. */
export interface TaskRecord {
  readonly task_id: string;
  readonly kind: TaskKind;
  readonly state: TaskState;
  /** The request without secrets. */
  readonly request: Readonly<Record<string, unknown>>;
  readonly origin: TaskOrigin;
  readonly created_at: string;
  readonly updated_at: string;
  readonly finished_at?: string;
  readonly result?: TaskResult;
  /** Set by the workflow once an order exists, so a dangling order can always be found and cancelled. */
  readonly order_id?: number;
  readonly server_id?: number;
  /**
   * Epoch ms at which the workflow was about to send create_order for `server_id` (an intent marker):
   * a retried PlaceOrder that finds it reconciles through my_orders instead of placing a second order.
   */
  readonly order_intent_at?: number;
  /**
   * Epoch ms of the create_order the marketplace refused with a result code (issue 31 §5): when it is
   * not older than `order_intent_at`, that intent placed nothing and a retry places again at once.
   */
  readonly order_refused_at?: number;
  /** True once the workflow (or the safety net) cancelled `order_id`, so nobody cancels it twice. */
  readonly order_cancelled?: boolean;
  /** A standing order's end of waiting (Unix seconds), set when it first waits (issue 23). */
  readonly waiting_until?: number;
  /** Outbid recovery (issue 23): what happened to the task's orders, oldest first. */
  readonly history?: readonly TaskHistoryEntry[];
}

/** One step of a create-order task's outbid recovery, as GET /webhook/tasks/{id} lists it. */
export const TaskHistoryEntrySchema = builtOnFirstUse(() =>
  z.object({
    /** Unix seconds. */
    at: z.number(),
    /** The lifecycle event's name (`order.outbid`, `order.rebid`, `order.replaced`, `order.recovery_failed`). */
    event: z.string(),
    /** The order the step is about (order.replaced: the new one). */
    order_id: z.number(),
    old_price: z.optional(z.number()),
    new_price: z.optional(z.number()),
    currency: z.optional(z.string()),
    from_order_id: z.optional(z.number()),
    to_order_id: z.optional(z.number()),
    ssh_connection: z.optional(z.string()),
    reason: z.optional(z.string()),
  }),
);
export type TaskHistoryEntry = Readonly<z.infer<ReturnType<typeof TaskHistoryEntrySchema>>>;

/** A job on the SQS queue (cancel-order, status, price-alert, extend-order, set-spot-price). */
export interface JobMessage {
  readonly task_id: string;
  readonly kind: Exclude<TaskKind, 'create-order'>;
  readonly input:
    CancelOrderInput | StatusInput | PriceAlertInput | ExtendOrderInput | SetSpotPriceInput | CancelTaskInput;
  readonly origin: TaskOrigin;
}
