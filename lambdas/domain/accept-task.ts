/**
 * Accepting a task at the API: claim the idempotency key, record the task (queued), hand it off to
 * the workflow or the job queue. The relay never answers "queued" for something it did not queue:
 * if anything before the hand-off completes fails, the record and the key are undone.
 */
import type { CreateOrderWorkflowInput, IdempotencyStore, JobQueue, TaskRepository, WorkflowStarter } from './ports';
import { HandOffError, TaskAlreadyExistsError } from './errors';
import type { JobMessage, TaskOrigin, TaskRecord, TaskRequest } from './task';

/** Idempotency keys bind for 24 h (hardening issue). */
export const IDEMPOTENCY_KEY_TTL_SECONDS = 24 * 3600;

// Kept importable from here: the API handlers and the e2e tests name them through this module.
export { HAND_OFF_FAILED_MESSAGE, HandOffError } from './errors';

export interface AcceptTaskDeps {
  readonly tasks: TaskRepository;
  readonly workflow: WorkflowStarter;
  readonly queue: JobQueue;
  /** Without a store, Idempotency-Key headers are ignored. */
  readonly idempotency?: IdempotencyStore;
}

export interface AcceptTaskOptions {
  readonly taskId: string;
  /** Epoch ms. */
  readonly now: number;
  readonly origin: TaskOrigin;
  readonly idempotencyKey?: string;
  /** How long the key binds. @default IDEMPOTENCY_KEY_TTL_SECONDS (24 h) */
  readonly idempotencyTtlSeconds?: number;
  readonly timing: { readonly poll_interval_seconds: number; readonly ready_timeout_seconds: number };
  readonly softLimitSeconds: number;
}

/**
 * The request as stored in the task record: without secrets. Environment variable values are
 * dropped (their names are kept, so an operator can see what was asked for, and PlaceOrder knows
 * the order needs them); the values are sealed beside the record until the task ends.
 */
export const recordedRequest = (request: TaskRequest): Record<string, unknown> => {
  if (request.kind === 'create-order') {
    const { env, ...rest } = request.input;
    return env ? { ...rest, env_names: Object.keys(env) } : { ...rest };
  }
  return { ...request.input };
};

/**
 * Idempotency keys are scoped by task kind: a client that reuses one key on two different routes
 * gets two tasks, never the create-order task id back from a cancel.
 */
export const scopedIdempotencyKey = (kind: TaskRequest['kind'], key: string): string => `${kind}:${key}`;

/**
 * Records and hands off one task. With an idempotency key, a repeat (within 24 h, or the given TTL) returns the first
 * request's task id with `replayed: true` and starts nothing. Throws {@link HandOffError} when the
 * task could not be recorded or handed off; by then the record is removed and the key released.
 */
export const acceptTask = async (
  deps: AcceptTaskDeps,
  request: TaskRequest,
  opts: AcceptTaskOptions,
): Promise<{ taskId: string; replayed: boolean }> => {
  const key = opts.idempotencyKey !== undefined && deps.idempotency ? scopedIdempotencyKey(request.kind, opts.idempotencyKey) : undefined;
  if (key !== undefined && deps.idempotency) {
    let bound: string;
    try {
      bound = await deps.idempotency.claim(key, opts.taskId, opts.now, opts.idempotencyTtlSeconds ?? IDEMPOTENCY_KEY_TTL_SECONDS);
    } catch (cause) {
      throw new HandOffError({ cause });
    }
    if (bound !== opts.taskId) return { taskId: bound, replayed: true };
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
  const { request: handedOff, orderEnv } = sealRequest(request);
  let recorded = false;
  try {
    try {
      await deps.tasks.create(record, orderEnv ? { orderEnv } : undefined);
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
    if (key !== undefined && deps.idempotency) await deps.idempotency.release(key, opts.taskId).catch(() => undefined);
    throw new HandOffError({ cause });
  }
  return { taskId: opts.taskId, replayed: false };
};

/** A standing order's timing (issue 23): when it was accepted (ms) and when its wait ends (s). Nothing without a wait. */
export const standingTiming = (waitSeconds: number | undefined, nowMs: number): { waiting_until?: number; accepted_at?: number } =>
  waitSeconds !== undefined && waitSeconds > 0 ? { waiting_until: Math.floor(nowMs / 1000) + waitSeconds, accepted_at: nowMs } : {};

/** The request without the create-order env values, and those values. */
export const sealRequest = (request: TaskRequest): { request: TaskRequest; orderEnv?: Readonly<Record<string, string>> } => {
  if (request.kind !== 'create-order' || request.input.env === undefined) return { request };
  const { env, ...input } = request.input;
  return { request: { kind: 'create-order', input }, orderEnv: env };
};

const handOff = async (deps: AcceptTaskDeps, request: TaskRequest, opts: AcceptTaskOptions): Promise<void> => {
  if (request.kind === 'create-order') {
    const input: CreateOrderWorkflowInput = {
      task_id: opts.taskId,
      request: request.input,
      origin: opts.origin,
      timing: {
        poll_interval_seconds: opts.timing.poll_interval_seconds,
        ready_timeout_seconds: opts.timing.ready_timeout_seconds,
        soft_deadline: Math.floor(opts.now / 1000) + opts.softLimitSeconds,
        ...standingTiming(request.input.wait_seconds, opts.now),
      },
    };
    await deps.workflow.start(opts.taskId, input);
    return;
  }
  const message: JobMessage = { task_id: opts.taskId, kind: request.kind, input: request.input, origin: opts.origin };
  await deps.queue.send(message);
};
