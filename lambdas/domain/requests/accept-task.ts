/**
 * Accepting a task at the API: claim the idempotency key, record the task (queued), hand it off to
 * the workflow or the job queue. The relay never answers "queued" for something it did not queue:
 * if anything before the hand-off completes fails, the record and the key are undone.
 */
import type {
  CreateOrderWorkflowInput,
  IdempotencyStore,
  JobQueue,
  TaskRepository,
  WaitingCaps,
  WaitingTasks,
  WorkflowOrderRequest,
  WorkflowOrigin,
  WorkflowStarter,
} from '../ports';
import { HandOffError, TaskAlreadyExistsError, WaitingQueueFullError } from '../errors';
import { replaces } from '../recovery/on-outbid';
import { waitingEntry } from '../recovery/waiting-entry';
import type { CreateOrderInput, JobMessage, TaskOrigin, TaskRecord, TaskRequest } from '../task';
import type { OrderAccessSecrets } from '../access/order-access';

/** Idempotency keys bind for 24 h (hardening issue). */
export const IDEMPOTENCY_KEY_TTL_SECONDS = 24 * 3600;

// Kept importable from here: the API handlers and the e2e tests name them through this module.
export { HAND_OFF_FAILED_MESSAGE, HandOffError } from '../errors';

export interface AcceptTaskDeps {
  readonly tasks: TaskRepository;
  readonly workflow: WorkflowStarter;
  readonly queue: JobQueue;
  /** Without a store, Idempotency-Key headers are ignored. */
  readonly idempotency?: IdempotencyStore;
  /** Signed requests already accepted (`signedRequest` option); without a store, not checked. */
  readonly signedRequests?: IdempotencyStore;
  /**
   * The waiting queue and its caps (issue 29 §5): a standing order is admitted (its slots and a pending
   * entry) before anything else is recorded, or refused with WaitingQueueFullError. Absent: not capped.
   */
  readonly standing?: { readonly waiting: Pick<WaitingTasks, 'admit' | 'remove'>; readonly caps: WaitingCaps };
}

/**
 * A signed, timestamped request: its route, timestamp and signature name it. The same request sent
 * again while its timestamp is still accepted makes no second task (issue 21).
 */
export interface SignedRequestKey {
  /** Route, timestamp and (lowercased) signature; the store hashes it. */
  readonly key: string;
  /** How long the binding must last: until the timestamp leaves the replay window, plus clock margin. */
  readonly ttlSeconds: number;
}

export interface AcceptTaskOptions {
  readonly taskId: string;
  /** Epoch ms. */
  readonly now: number;
  readonly origin: TaskOrigin;
  readonly idempotencyKey?: string;
  /** How long the key binds. @default IDEMPOTENCY_KEY_TTL_SECONDS (24 h) */
  readonly idempotencyTtlSeconds?: number;
  /** The signed request this task is for, when it carried a timestamp. */
  readonly signedRequest?: SignedRequestKey;
  readonly timing: { readonly poll_interval_seconds: number; readonly ready_timeout_seconds: number };
  readonly softLimitSeconds: number;
}

/**
 * The request as stored in the task record: without secrets. Environment variable values are
 * dropped (their names are kept, so an operator can see what was asked for, and PlaceOrder knows
 * the order needs them); the values are kept beside the record (in the KMS-encrypted table) until the task ends.
 */
export const recordedRequest = (request: TaskRequest): Record<string, unknown> => {
  if (request.kind === 'create-order') {
    const { env, ssh_password, jupyter_token, command, ...rest } = request.input;
    const sealed = accessSealedNames({ ssh_password, jupyter_token, command });
    return {
      ...rest,
      ...(env ? { env_names: Object.keys(env) } : {}),
      ...(sealed.length > 0 ? { access_sealed: sealed } : {}),
    };
  }
  if (request.kind === 'price-alert') {
    const { jupyter_token, ...rest } = request.input;
    return { ...rest, ...(jupyter_token !== undefined ? { access_sealed: ['jupyter_token'] } : {}) };
  }
  return { ...request.input };
};

/** The names of the access secrets a request carries (issue 37): what its record says was sealed. */
const accessSealedNames = (secrets: OrderAccessSecrets): (keyof OrderAccessSecrets)[] =>
  (Object.keys(secrets) as (keyof OrderAccessSecrets)[]).filter((name) => secrets[name] !== undefined);

/**
 * Idempotency keys are scoped by task kind: a client that reuses one key on two different routes
 * gets two tasks, never the create-order task id back from a cancel.
 */
export const scopedIdempotencyKey = (kind: TaskRequest['kind'], key: string): string => `${kind}:${key}`;

/**
 * Records and hands off one task. With an idempotency key, a repeat (within 24 h, or the given TTL) returns the first
 * request's task id with `replayed: true` and starts nothing; so does a copy of a signed timestamped
 * request (`signedRequest`) while its timestamp is accepted. A copy that arrives while the first is
 * still being handed off gets the first's task id at once, as an Idempotency-Key repeat does. Throws
 * {@link HandOffError} when the task could not be recorded or handed off; by then the record is
 * removed and both keys released, so a retry runs for real. Throws {@link WaitingQueueFullError} for a
 * standing order over a cap of the waiting queue, with nothing recorded.
 */
export const acceptTask = async (
  deps: AcceptTaskDeps,
  request: TaskRequest,
  opts: AcceptTaskOptions,
): Promise<{ taskId: string; replayed: boolean }> => {
  // The signed request first: its key cannot be changed by whoever replays it (the Idempotency-Key
  // header is not signed), so a replay with a fresh Idempotency-Key still finds the first task.
  const signed = opts.signedRequest !== undefined && deps.signedRequests ? opts.signedRequest : undefined;
  if (signed !== undefined && deps.signedRequests) {
    let bound: string;
    try {
      bound = await deps.signedRequests.claim(signed.key, opts.taskId, opts.now, signed.ttlSeconds);
    } catch (cause) {
      throw new HandOffError({ cause });
    }
    if (bound !== opts.taskId) return { taskId: bound, replayed: true };
  }
  const releaseSigned = async (): Promise<void> => {
    if (signed !== undefined && deps.signedRequests)
      await deps.signedRequests.release(signed.key, opts.taskId).catch(() => undefined);
  };

  const key =
    opts.idempotencyKey !== undefined && deps.idempotency
      ? scopedIdempotencyKey(request.kind, opts.idempotencyKey)
      : undefined;
  if (key !== undefined && deps.idempotency) {
    let bound: string;
    try {
      bound = await deps.idempotency.claim(
        key,
        opts.taskId,
        opts.now,
        opts.idempotencyTtlSeconds ?? IDEMPOTENCY_KEY_TTL_SECONDS,
      );
    } catch (cause) {
      await releaseSigned();
      throw new HandOffError({ cause });
    }
    if (bound !== opts.taskId) {
      // A new signed request repeating an earlier Idempotency-Key: its copies must get that task too.
      if (signed !== undefined && deps.signedRequests) {
        await releaseSigned();
        await deps.signedRequests.claim(signed.key, bound, opts.now, signed.ttlSeconds).catch(() => undefined);
      }
      return { taskId: bound, replayed: true };
    }
  }

  // A standing order takes its place under the waiting queue's caps first: over a cap nothing is recorded.
  const admitted = request.kind === 'create-order' && deps.standing ? standingEntry(request, opts) : undefined;
  if (admitted !== undefined && deps.standing) {
    let refusal: string | undefined;
    try {
      refusal = await deps.standing.waiting.admit(admitted, deps.standing.caps);
    } catch (cause) {
      if (key !== undefined && deps.idempotency)
        await deps.idempotency.release(key, opts.taskId).catch(() => undefined);
      await releaseSigned();
      throw new HandOffError({ cause });
    }
    if (refusal !== undefined) {
      if (key !== undefined && deps.idempotency)
        await deps.idempotency.release(key, opts.taskId).catch(() => undefined);
      await releaseSigned();
      throw new WaitingQueueFullError(refusal);
    }
  }

  const nowIso = new Date(opts.now).toISOString();
  const record: TaskRecord = {
    task_id: opts.taskId,
    kind: request.kind,
    state: 'queued',
    request: recordedRequest(request),
    origin: opts.origin,
    created_at: nowIso,
    updated_at: nowIso,
  };

  // Container env values (often tokens) are stored beside the record, never in the workflow input:
  // that stays in the execution history for 90 days and in EventBridge status-change events.
  const { request: handedOff, orderEnv, orderAccess } = sealRequest(request);
  let recorded = false;
  try {
    try {
      await deps.tasks.create(
        record,
        orderEnv || orderAccess
          ? {
              ...(orderEnv
                ? {
                    orderEnv,
                    ...(keepsEnv(request) ? { keepForReplacement: true } : {}),
                    // A standing order's env may wait up to 24 h: sealed like the replacement copy (issue 38 §7).
                    ...(isStandingOrder(request) ? { sealOrderEnv: true } : {}),
                  }
                : {}),
              ...(orderAccess ? { orderAccess } : {}),
            }
          : undefined,
      );
    } catch (error) {
      // The id is new to this request: "already exists" means this request's own write landed and
      // only its answer was lost (the SDK retried the put after a timeout). Go on with the hand-off.
      if (!(error instanceof TaskAlreadyExistsError)) throw error;
    }
    recorded = true;
    await handOff(deps, handedOff, opts);
  } catch (cause) {
    // Undo in reverse order; an undo that fails too must not hide the original failure.
    if (recorded) await deps.tasks.remove(opts.taskId).catch(() => undefined);
    if (admitted !== undefined && deps.standing)
      await deps.standing.waiting.remove(opts.taskId, 0).catch(() => undefined);
    if (key !== undefined && deps.idempotency) await deps.idempotency.release(key, opts.taskId).catch(() => undefined);
    await releaseSigned();
    throw new HandOffError({ cause });
  }
  return { taskId: opts.taskId, replayed: false };
};

/** A standing order's timing (issue 23): when it was accepted (ms) and when its wait ends (s). Nothing without a wait. */
export const standingTiming = (
  waitSeconds: number | undefined,
  nowMs: number,
): { waiting_until?: number; accepted_at?: number } =>
  waitSeconds !== undefined && waitSeconds > 0
    ? { waiting_until: Math.floor(nowMs / 1000) + waitSeconds, accepted_at: nowMs }
    : {};

/** A standing order (`wait_seconds` > 0): its task may wait up to 24 h before PlaceOrder reads its env. */
const isStandingOrder = (request: TaskRequest): boolean =>
  request.kind === 'create-order' && (request.input.wait_seconds ?? 0) > 0;

/** A create-order whose order may be replaced (issue 23) keeps its env for the replacement round. */
const keepsEnv = (request: TaskRequest): boolean =>
  request.kind === 'create-order' && replaces(request.input.on_outbid);

/**
 * The request without the create-order env values and access secrets (issue 37: password, Jupyter
 * token, start-up script), and those values, which the record keeps sealed beside it.
 */
export const sealRequest = (
  request: TaskRequest,
): { request: TaskRequest; orderEnv?: Readonly<Record<string, string>>; orderAccess?: OrderAccessSecrets } => {
  if (request.kind === 'price-alert' && request.input.jupyter_token !== undefined) {
    // The token of the order an alert may queue (issue 37): sealed with the alert, never in the job message.
    const { jupyter_token, ...input } = request.input;
    return { request: { kind: 'price-alert', input }, orderAccess: { jupyter_token } };
  }
  if (request.kind !== 'create-order') return { request };
  const { env, ssh_password, jupyter_token, command, ...input } = request.input;
  const access: OrderAccessSecrets = { ssh_password, jupyter_token, command };
  const names = accessSealedNames(access);
  return {
    request: { kind: 'create-order', input },
    ...(env !== undefined ? { orderEnv: env } : {}),
    ...(names.length > 0
      ? { orderAccess: Object.fromEntries(names.map((name) => [name, access[name]])) as OrderAccessSecrets }
      : {}),
  };
};

/**
 * The create-order request as the workflow input carries it: no env values (kept beside the record)
 * and no callback_url (in the record, read by the deliverers). Caller URLs may carry tokens, and the
 * input is kept in the execution history for 90 days and sent in EventBridge status-change events.
 */
export const workflowRequest = (input: CreateOrderInput): WorkflowOrderRequest => {
  const {
    env: _env,
    callback_url: _callbackUrl,
    lifecycle_events: _events,
    ssh_password: _password,
    jupyter_token: _token,
    command: _command,
    ...rest
  } = input;
  return rest;
};

/** The origin as the workflow input carries it: the source only (Slack's response_url stays in the record). */
export const workflowOrigin = (origin: TaskOrigin): WorkflowOrigin => ({
  source: origin.source,
  ...(origin.caller ? { caller: origin.caller } : {}),
});

/** The create-order workflow's input for the accepted task. */
const workflowInputOf = (
  request: Extract<TaskRequest, { kind: 'create-order' }>,
  opts: AcceptTaskOptions,
): CreateOrderWorkflowInput => ({
  task_id: opts.taskId,
  request: workflowRequest(request.input),
  origin: workflowOrigin(opts.origin),
  timing: {
    poll_interval_seconds: opts.timing.poll_interval_seconds,
    ready_timeout_seconds: opts.timing.ready_timeout_seconds,
    soft_deadline: Math.floor(opts.now / 1000) + opts.softLimitSeconds,
    ...standingTiming(request.input.wait_seconds, opts.now),
  },
});

/** A standing order's pending queue entry (round 0), or undefined for an order that does not wait. */
const standingEntry = (request: Extract<TaskRequest, { kind: 'create-order' }>, opts: AcceptTaskOptions) => {
  const input = workflowInputOf(request, opts);
  return input.timing.waiting_until === undefined ? undefined : waitingEntry(input, 0);
};

const handOff = async (deps: AcceptTaskDeps, request: TaskRequest, opts: AcceptTaskOptions): Promise<void> => {
  if (request.kind === 'create-order') {
    await deps.workflow.start(opts.taskId, workflowInputOf(request, opts));
    return;
  }
  const message: JobMessage = { task_id: opts.taskId, kind: request.kind, input: request.input, origin: opts.origin };
  await deps.queue.send(message);
};
