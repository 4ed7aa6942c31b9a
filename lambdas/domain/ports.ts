/** Ports: what the domain needs from the outside world, in domain words. Adapters implement them. */
import type { CreateOrderRequest, Order, Server, Wallet } from './marketplace-types';
import type { JobMessage, TaskRecord, TaskResult, CreateOrderInput, TaskOrigin, TaskHistoryEntry } from './task';
import type { SshEndpoint } from './leases/ssh-endpoint';
import type { OrderAccessSecrets } from './access/order-access';
import type { Prefer } from './hosts/matching';

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

/** Why an ssh endpoint did not answer with a banner. */
export type SshProbeFailure =
  /** Connection refused (nothing listens yet). */
  | 'refused'
  /** The connection was reset or closed before a banner. */
  | 'reset'
  /** No banner within the probe's timeout (connecting or reading). */
  | 'timeout'
  /** Something answered, but not with `SSH-`. */
  | 'not_ssh'
  /** The host is (or resolves to) a private, loopback, link-local or reserved address, which a deployed relay never connects to. */
  | 'address_refused'
  /** DNS or network failure. */
  | 'unreachable'
  /** READINESS_PROBE=ssh-login: the ssh server answered, but refused the order's password (issue 31 §4). */
  | 'login_refused';

export type SshProbeResult =
  | {
      readonly answered: true;
      readonly banner: string;
      /** READINESS_PROBE=ssh-login: the host key's fingerprint seen at the successful login, `SHA256:<base64>`. */
      readonly host_key_sha256?: string;
      /** The same host key in full, as known_hosts holds it (`ssh-ed25519 AAAA…`): what callers pin (issue 37 §4). */
      readonly host_key?: string;
    }
  | { readonly answered: false; readonly reason: SshProbeFailure; readonly detail?: string };

/**
 * Checks that an order's ssh endpoint answers (READINESS_PROBE=ssh): connects, reads the SSH banner
 * within a short timeout and closes. Never throws; every failure is a result.
 */
export interface SshProbe {
  probe(endpoint: SshEndpoint): Promise<SshProbeResult>;
}

/** READINESS_PROBE=ssh-login (issue 31 §4): an SSH login with the order's password. Never throws. */
export interface SshLoginProbe {
  login(endpoint: SshEndpoint, password: string): Promise<SshProbeResult>;
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
  /**
   * Records a rate-limited answer (HTTP 429 / code 5) to a request sent at `report.sentAt`. The key's
   * interval doubles (capped at `policy.maxIntervalMs`) when that request was paced at the interval in
   * force, and stays widened until `policy.quietMs` pass without another report; meanwhile every
   * caller's slots are spaced `intervalMs + (widened interval - policy.minIntervalMs)`. A widening voids
   * every slot handed out before it (see `widenedAt`). Idempotent for one report (a retried write).
   */
  rateLimited(keyId: string, intervalMs: number, now: number, report: RateLimitReport): Promise<PacingWidening>;
  /** When the key's interval last widened (epoch ms), if ever: a slot claimed at or before then (same millisecond included: it may have come first) is void and must be claimed again. */
  widenedAt(keyId: string): Promise<number | undefined>;
}

/** How the pacing interval adapts to rate-limited answers. */
export interface AdaptivePacingPolicy {
  /** The interval when the marketplace is quiet (MARKETPLACE_MIN_INTERVAL_MS). 0: no pacing, nothing widens. */
  readonly minIntervalMs: number;
  /** The widest interval (MARKETPLACE_MAX_INTERVAL_MS); at or below the minimum, nothing widens. */
  readonly maxIntervalMs: number;
  /** Back to the minimum once this long passes without a rate-limited answer (a quiet minute). */
  readonly quietMs: number;
}

export interface RateLimitReport {
  /** When the rate-limited request was sent (epoch ms). */
  readonly sentAt: number;
  readonly policy: AdaptivePacingPolicy;
  /** The caller's lanes: a widening keeps each lane's next slot within its spacing of now. */
  readonly lanes: readonly PacingLaneRequest[];
}

export interface PacingWidening {
  /** The key's interval (ms, the marketplace-facing one, without the gate's lateness margin) before and after the report. */
  readonly previousMs: number;
  readonly intervalMs: number;
  /** True when this report widened it (false: already widened for this request, at the cap, or pacing off). */
  readonly widened: boolean;
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
  hit(
    key: string,
    opts: { now: number; windowMs: number; limit: number; eventId: string },
  ): Promise<{ allowed: boolean; retryAfterMs: number; count: number }>;
}

/** What TaskRepository.update may set: the record's state and workflow markers. */
export type TaskUpdate = Partial<
  Pick<
    TaskRecord,
    'state' | 'order_id' | 'server_id' | 'order_intent_at' | 'order_refused_at' | 'order_cancelled' | 'waiting_until'
  >
>;

export interface TaskRepository {
  /**
   * Creates the record in state queued. Fails if the id exists. `sealed` holds what must never be in
   * the record as read by `get` (nor in the workflow input): the create-order container env values.
   */
  create(record: TaskRecord, sealed?: SealedTaskInput): Promise<void>;
  get(taskId: string): Promise<TaskRecord | undefined>;
  /** The container env stored by `create` (PlaceOrder reads it); undefined once the task is final. */
  orderEnv?(taskId: string): Promise<Readonly<Record<string, string>> | undefined>;
  /**
   * The container env a task that may be replaced keeps after it ends (`SealedTaskInput.keepForReplacement`):
   * the fleet watch seals it into the replacement round (issue 23). Undefined when none is kept.
   */
  replacementEnv?(taskId: string): Promise<Readonly<Record<string, string>> | undefined>;
  /** Drops the kept replacement env and the access secrets (issue 29 §6, issue 37 §3: the order's lease ended). */
  dropReplacementEnv?(taskId: string): Promise<void>;
  /** The access secrets sealed by `create` (issue 37): kept after a success until the lease ends. */
  orderAccess?(taskId: string): Promise<OrderAccessSecrets | undefined>;
  /** The same secrets still sealed (ciphertext), to copy into another task (`SealedTaskInput.sealedAccess`). */
  sealedAccess?(taskId: string): Promise<string | undefined>;
  /** Moves a non-final task to `state` (running) and merges fields like order_id. */
  update(taskId: string, fields: TaskUpdate, now: number): Promise<void>;
  /**
   * Records the final result once. Returns true for the one caller that moved the task to a final
   * state, false when it was already final: only that caller delivers the result. `finisher` names a
   * caller that stays the same across its own retries (the workflow's ReportResult of this task): if
   * an earlier attempt's final write landed but its answer never arrived, the retry is still the
   * winner and delivers — unless `markDelivered` recorded that the result went out. Without it, every
   * call is a finisher of its own.
   */
  finish(
    taskId: string,
    state: 'succeeded' | 'failed',
    result: TaskResult,
    now: number,
    finisher?: string,
  ): Promise<boolean>;
  /** Records that a named finisher's result went out, so a later retry of that finisher does not deliver it again. */
  markDelivered(taskId: string, now: number): Promise<void>;
  /** Removes a record whose hand-off failed, so no queued task exists without work behind it. */
  remove(taskId: string): Promise<void>;
  /** Appends one outbid-recovery step to the task's history (issue 23); final tasks too. Missing task: no-op. */
  appendHistory?(taskId: string, entry: TaskHistoryEntry, now: number): Promise<void>;
}

/** What a task keeps beside its record until it ends: values too secret for logs, history or events. */
export interface SealedTaskInput {
  readonly orderEnv?: Readonly<Record<string, string>>;
  /** Keep a copy of `orderEnv` after the task ends (on_outbid replace modes: a replacement round needs it). */
  readonly keepForReplacement?: boolean;
  /**
   * Store `orderEnv` itself sealed, like the replacement copy (issue 38 §7): a standing order's env may
   * wait up to 24 h. Refused (never kept in clear) without a sealer.
   */
  readonly sealOrderEnv?: boolean;
  /** The create-order's access secrets (issue 37), sealed; kept after a success until the lease ends. */
  readonly orderAccess?: OrderAccessSecrets;
  /**
   * Access secrets already sealed (`TaskRepository.sealedAccess` of another task): copied as they are,
   * so a price alert's queued order and a replacement round carry the same secrets without opening them.
   */
  readonly sealedAccess?: string;
}

/** Starts the create-order workflow (Step Functions execution named by task id). */
export interface WorkflowStarter {
  /**
   * `executionName` (default: the task id) names a later execution of the same task: a standing
   * order resumed by the fleet watch (`<task id>-w<round>`). A name already used starts nothing.
   */
  start(taskId: string, input: CreateOrderWorkflowInput, executionName?: string): Promise<void>;
}

/** Sends a job to the queue. */
export interface JobQueue {
  send(message: JobMessage): Promise<void>;
}

/**
 * The create-order request as the workflow carries it: without callback_url, and `env` is never set by
 * the relay. Both stay out of the execution history (kept 90 days) and EventBridge events: env values
 * are kept beside the task record (PlaceOrder reads them with `TaskRepository.orderEnv`), and the
 * deliverers (ReportResult, ExecutionEnded) read callback_url from the record.
 */
export type WorkflowOrderRequest = Omit<
  CreateOrderInput,
  'callback_url' | 'ssh_password' | 'jupyter_token' | 'command'
> & {
  readonly callback_url?: never;
  readonly ssh_password?: never;
  readonly jupyter_token?: never;
  readonly command?: never;
};

/** The task origin as the workflow carries it: without Slack's response_url (read from the record). */
/** The origin in the workflow input: the source and the caller key's name and limits (no secret), never Slack's response_url. */
export type WorkflowOrigin = Pick<TaskOrigin, 'source' | 'caller'> & { readonly responseUrl?: never };

/** The workflow's input document: no secret values and no caller URLs (see WorkflowOrderRequest). */
export interface CreateOrderWorkflowInput {
  readonly task_id: string;
  readonly request: WorkflowOrderRequest;
  readonly origin: WorkflowOrigin;
  /** Timing from config, so Wait states and deadlines follow the environment. `soft_deadline` is epoch seconds. */
  readonly timing: {
    readonly poll_interval_seconds: number;
    readonly ready_timeout_seconds: number;
    readonly soft_deadline: number;
    /** A standing order (issue 23): when its wait ends (epoch seconds), the same in every execution of the task. */
    readonly waiting_until?: number;
    /** A standing order: when the relay accepted it (epoch ms), its place in the first-come-first-served queue. */
    readonly accepted_at?: number;
  };
  /** Set by the fleet watch when it resumes a standing order: the server it claimed for the task and the waiting round. */
  readonly resume?: { readonly server_id: number; readonly round: number };
  /**
   * Set by the fleet watch on a replacement round (issue 23, ./outbid-replacement.ts): the task and the
   * lost order it replaces, and that order's server (never chosen again). The watch reports the result.
   */
  readonly replaces?: { readonly task_id: string; readonly order_id: number; readonly server_id: number };
}

/** Claims a server for one task so concurrent tasks never race for it. */
export interface ServerClaims {
  claim(serverId: number, taskId: string, now: number, ttlSeconds: number): Promise<boolean>;
  release(serverId: number, taskId: string): Promise<void>;
}

/** A create_order the relay was about to send (issue 20, item 5): how an order nobody kept is found again. */
export interface PlacementIntent {
  readonly task_id: string;
  readonly server_id: number;
  /** Epoch ms just before create_order was sent. */
  readonly at: number;
}

/**
 * Open placement intents and the one owner of each order the relay placed. A task opens an intent
 * before create_order and closes it when it knows the outcome (nothing placed, or the order is its
 * own); an intent left open past the visibility window is the fleet watch's to settle.
 */
export interface PlacementIntents {
  open(intent: PlacementIntent): Promise<void>;
  close(intent: PlacementIntent): Promise<void>;
  /** Every open intent, oldest first. */
  list(): Promise<readonly PlacementIntent[]>;
  /**
   * Claims `orderId` for `owner` (`task:<id>` when a task keeps the order, `orphan` when the fleet
   * watch cancels it). The first claim wins; true for the owner that holds it, also on its own repeat.
   */
  claimOrder(orderId: number, owner: string, now: number): Promise<boolean>;
}

/** A standing order waiting for a server (issue 23): what the fleet watch needs to match, order and resume it. */
export interface WaitingTask {
  readonly task_id: string;
  /** Counts the task's waits: its resumed execution is named by it, and a removal names the round it ends. */
  readonly round: number;
  /** Epoch ms the task was accepted: first come, first served per GPU type. */
  readonly accepted_at: number;
  /** Epoch seconds: past it the task fails with the no-match text. */
  readonly waiting_until: number;
  readonly request: {
    readonly gpu_type: string;
    readonly max_price?: number;
    readonly currency: string;
    readonly use_spot: boolean;
    readonly max_hours?: number;
    /** The request's host filters and `prefer` (issue 38 §2): the sweep claims only a server the task can use, the one it prefers. */
    readonly min_reliability?: number;
    readonly min_rating?: number;
    readonly min_rating_count?: number;
    readonly exclude_servers?: readonly number[];
    readonly prefer?: Prefer;
  };
  /** The execution timing to resume with (the soft deadline is set fresh). */
  readonly poll_interval_seconds: number;
  readonly ready_timeout_seconds: number;
  /**
   * Epoch seconds: the hourly order cap or a budget refused the task's order (create-order/wait-for-quota.ts);
   * the watch does not resume it before then. It keeps its place in the queue meanwhile.
   */
  readonly held_until?: number;
  /** The refusal's text: the failure when the wait ends while the task is held. */
  readonly held_by?: string;
  /** The caller key whose task it is (issue 29: its per-key cap, and its revocation ends the wait); absent = the default key. */
  readonly key_name?: string;
  /**
   * Admitted at acceptance, its first FindServer not done yet (issue 29 §5): it holds its slots under
   * the caps, but the watch does not serve it and no later arrival queues behind it. Round 0.
   */
  readonly pending?: true;
}

/** The waiting queue's caps (MAX_WAITING_TASKS_PER_KEY, MAX_WAITING_TASKS). */
export interface WaitingCaps {
  readonly perKey: number;
  readonly total: number;
}

/**
 * The queue of standing orders: one entry per task, each holding a slot under the caps until it is
 * removed. The fleet watch reads the whole queue in one listing each sweep.
 */
export interface WaitingTasks {
  /**
   * Adds or replaces the task's entry; an entry new to the queue takes its slots beyond the caps (the
   * task was admitted before). A slot taken for an entry that cannot be written is given back.
   */
  add(task: WaitingTask): Promise<void>;
  /**
   * Admits a new standing order under the caps (its key's, the default key's too, and the relay's):
   * its slots and its entry, or the refusal text with nothing written. Throws when the entry cannot be
   * written, after giving its slots back.
   */
  admit(task: WaitingTask, caps: WaitingCaps): Promise<string | undefined>;
  /** The task's entry (read consistently), or undefined. */
  get(taskId: string): Promise<WaitingTask | undefined>;
  /** Every waiting task (or those for one GPU type), in first-come-first-served order (accepted_at, then task id). */
  list(gpuType?: string): Promise<readonly WaitingTask[]>;
  /** Removes the task's entry (only that round's when `round` is given) and frees its slots; true for the one caller that removed it. */
  remove(taskId: string, round?: number): Promise<boolean>;
  /**
   * Issue 38 §1: makes the slots under the caps what the queue holds (`listed`: the sweep's listing),
   * freeing those of entries that are gone and setting counts that drifted; how many it repaired. The
   * fleet watch calls it every sweep. Absent: the slots are exact by construction.
   */
  recount?(listed: readonly WaitingTask[], nowMs: number): Promise<number>;
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
