/**
 * Standing orders (issue 23): a create-order with `wait_seconds` > 0 that finds no matching server
 * does not fail: FindServer puts it in the waiting queue (WaitingTasks) and its execution ends; the
 * fleet watch serves the queue each sweep, with ONE listing read (through the shared read cache) for
 * all waiting tasks together, first come first served per GPU type, and resumes a served task with a
 * new execution of the same create-order workflow (a fresh soft deadline: the waiting phase is not
 * part of any execution). A task whose wait ended fails with the spec's no-match text. A resumed
 * task the hourly cap or a budget refuses waits again in its place, held until the refusal may have
 * cleared (create-order/wait-for-quota.ts); when its wait ends meanwhile it fails with that refusal.
 *
 * Pure rules and the watch's use case; time arrives as arguments (`nowMs` epoch ms).
 */
import { workflowOrigin, workflowRequest } from '../requests/accept-task';
import { completeTask } from '../requests/complete-task';
import { DEFAULT_KEY_NAME, type KeyCheck } from '../teams/caller-keys';
import { CLAIM_TTL_SECONDS } from '../create-order/workflow-state';
import { serverFitsLease } from '../leases/lease';
import { avoidedFor, type HostAvoidances, type HostRecords } from '../hosts/host-records';
import { findMatchingServers, noMatchMessage, orderByPreference } from '../hosts/matching';
import type { Server } from '../marketplace-types';
import type {
  CreateOrderWorkflowInput,
  MarketplaceClient,
  Notifier,
  ServerClaims,
  TaskRepository,
  WaitingTask,
  WaitingTasks,
  WorkflowStarter,
} from '../ports';
import {
  failure,
  FINAL_STATES,
  type CancelTaskInput,
  type CancelTaskSuccess,
  type CreateOrderInput,
  type FailureResult,
  type TaskRecord,
} from '../task';

export { MAX_WAIT_SECONDS, WAIT_SECONDS_ERROR } from '../requests/request-rules';

/** The execution name of a task's resumed run: `<task id>-w<round>` (unique per round, so a repeated start is a no-op). */
export const resumedExecutionName = (taskId: string, round: number): string => `${taskId}-w${round}`;

/** The GPU type as the queue groups it (matching is case-insensitive and trimmed). */
export const queueKey = (gpuType: string): string => gpuType.trim().toLowerCase();

/** First come, first served: accepted earlier first, task id as the tie-break. */
export const byArrival = (a: WaitingTask, b: WaitingTask): number =>
  a.accepted_at - b.accepted_at || (a.task_id < b.task_id ? -1 : a.task_id > b.task_id ? 1 : 0);

/**
 * The refusal of a standing order over a cap of the waiting queue (issue 29 §5: 429, nothing queued):
 * `too many waiting orders (20 for key ci)` for a caller key's cap, `too many waiting orders (1000)` for the relay's.
 */
export const waitingCapText = (over: { readonly cap: number; readonly keyName?: string }): string =>
  over.keyName === undefined
    ? `too many waiting orders (${over.cap})`
    : `too many waiting orders (${over.cap} for key ${over.keyName})`;

/** Entries the watch serves and new arrivals queue behind: admitted tasks whose first FindServer is still running are not. */
export const queued = (waiting: readonly WaitingTask[]): WaitingTask[] => waiting.filter((w) => w.pending !== true);

/** 1-based place of a task among the waiting tasks for the same GPU type, or undefined when it is not waiting. */
export const queuePosition = (waiting: readonly WaitingTask[], taskId: string): number | undefined => {
  const own = queued(waiting).find((w) => w.task_id === taskId);
  if (!own) return undefined;
  const key = queueKey(own.request.gpu_type);
  return (
    queued(waiting)
      .filter((w) => queueKey(w.request.gpu_type) === key)
      .sort(byArrival)
      .findIndex((w) => w.task_id === taskId) + 1
  );
};

/** A task that may still wait at `nowMs`: it asked to, and its wait has not ended. */
export const mayWait = (input: Pick<CreateOrderWorkflowInput, 'request' | 'timing'>, nowMs: number): boolean =>
  (input.request.wait_seconds ?? 0) > 0 &&
  input.timing.waiting_until !== undefined &&
  nowMs < input.timing.waiting_until * 1000;

export { waitingEntry } from './waiting-entry';

/**
 * Servers that would serve `task` now, without those in `taken`: matched with its GPU type, price and
 * host filters (issue 38 §2) and fit for its lease, in the order its `prefer` tries them.
 */
export const serversFor = (
  task: WaitingTask,
  servers: readonly Server[],
  taken: ReadonlySet<number>,
  avoided: ReadonlySet<number> = new Set(),
): Server[] =>
  orderByPreference(
    findMatchingServers(servers, { ...task.request, claimed: taken, avoided }).filter((s) =>
      serverFitsLease(s, task.request.max_hours),
    ),
    task.request.prefer,
    task.request,
  );

/** Older waiting tasks for the same GPU type than `input`'s task, other than itself: a new arrival queues behind them. */
export const olderWaiting = (
  waiting: readonly WaitingTask[],
  input: CreateOrderWorkflowInput,
  acceptedAt: number,
): WaitingTask[] =>
  queued(waiting).filter(
    (w) =>
      w.task_id !== input.task_id &&
      queueKey(w.request.gpu_type) === queueKey(input.request.gpu_type) &&
      w.accepted_at <= acceptedAt,
  );

// ---- the fleet watch's part -------------------------------------------------------------------

export interface StandingOrderDeps {
  readonly waiting: WaitingTasks;
  /** Issue 29 §4: a waiting task whose caller key was revoked (or expired) fails instead of being served. Absent: not checked. */
  readonly keys?: KeyCheck;
  readonly marketplace: Pick<MarketplaceClient, 'listServers'>;
  readonly claims: Pick<ServerClaims, 'claim' | 'release'>;
  readonly tasks: TaskRepository;
  readonly notifier: Notifier;
  readonly workflow: WorkflowStarter;
  /** The relay's host records (issue 31 §2): hosts avoided after failed starts are never served. Absent: none avoided. */
  readonly hosts?: Pick<HostRecords, 'avoidances'>;
}

export interface StandingOrderSweep {
  readonly waiting: number;
  /** Tasks resumed with a claimed server. */
  readonly resumed: number;
  /** Tasks whose wait ended (failed with the no-match text). */
  readonly expired: number;
  /** Tasks failed because their caller key was revoked or expired (issue 29 §4). */
  readonly keyStopped: number;
  /** listServers calls: 0 or 1 per sweep, whatever the number of waiting tasks. */
  readonly listingReads: number;
  /** Slots under the caps the recount repaired (issue 38 §1: freed, taken again or counts set): the WaitingSlotsRepaired metric. */
  readonly slotsRepaired: number;
}

/** The failure of a standing order whose wait ended: the spec's no-match text. */
export const waitEndedResult = (request: Pick<CreateOrderInput, 'gpu_type' | 'max_price'>) =>
  failure(noMatchMessage(request.gpu_type, request.max_price));

/**
 * The failure of a waiting task whose wait ended: the refusal that queued it again (the hourly cap's
 * or a budget's text: a server was there, raising the price would not help), else the no-match text.
 */
export const expiredResult = (task: WaitingTask) =>
  task.held_by ? failure(task.held_by) : waitEndedResult(task.request);

/** A task the cap or a budget refused, not to be resumed before its `held_until`. */
export const isHeld = (task: WaitingTask, nowMs: number): boolean =>
  task.held_until !== undefined && nowMs < task.held_until * 1000;

/** The workflow input of a resumed task, rebuilt from its record (the request as recorded, env values stay beside the record). */
export const resumedInput = (
  record: TaskRecord,
  task: WaitingTask,
  serverId: number,
  nowMs: number,
  softLimitSeconds: number,
): CreateOrderWorkflowInput => {
  const { env_names: _names, price_alert_task_id: _alert, ...request } = record.request as Record<string, unknown>;
  return {
    task_id: task.task_id,
    // Caller URLs stay in the record, out of the execution history (issue 21 item 6).
    request: workflowRequest(request as unknown as CreateOrderInput),
    origin: workflowOrigin(record.origin),
    timing: {
      poll_interval_seconds: task.poll_interval_seconds,
      ready_timeout_seconds: task.ready_timeout_seconds,
      soft_deadline: Math.floor(nowMs / 1000) + softLimitSeconds,
      waiting_until: task.waiting_until,
      accepted_at: task.accepted_at,
    },
    resume: { server_id: serverId, round: task.round },
  };
};

/**
 * Serves the waiting queue once: one listing read for every waiting task; in first-come-first-served
 * order per GPU type each task gets the first matching server no earlier task took (claimed for it,
 * like FindServer does, so no new request takes it meanwhile) and is resumed; a task whose wait ended
 * fails with the no-match text (once: the queue removal decides). A task cancelled meanwhile (its
 * entry gone) gives its claim back.
 */
/**
 * The sweep ends a waiting task with `result` (its key stopped, or its wait ran out): whoever removes
 * its queue entry (`round`) decides, and the task gets its one result (callback_url, chat) unless it
 * already ended. True when this call ended it.
 */
const endWaitingTask = async (
  deps: {
    readonly waiting: Pick<WaitingTasks, 'remove'>;
    readonly tasks: TaskRepository;
    readonly notifier: Notifier;
  },
  task: { readonly task_id: string; readonly round: number },
  result: FailureResult,
  nowMs: number,
): Promise<boolean> => {
  if (!(await deps.waiting.remove(task.task_id, task.round))) return false;
  const record = await deps.tasks.get(task.task_id);
  if (!record || FINAL_STATES.includes(record.state)) return false;
  const url = typeof record.request.callback_url === 'string' ? record.request.callback_url : undefined;
  await completeTask(deps, { task_id: task.task_id, origin: record.origin, callback_url: url }, result, nowMs);
  return true;
};

export const serveWaitingTasks = async (
  deps: StandingOrderDeps,
  opts: { readonly nowMs: number; readonly softLimitSeconds: number; readonly canContinue?: () => boolean },
): Promise<StandingOrderSweep> => {
  const { nowMs } = opts;
  const waiting = [...(await deps.waiting.list())].sort(byArrival);
  // The slots are made what the queue holds first (issue 38 §1), also when nothing waits: a slot
  // whose entry was never written or is gone is given back here.
  const slotsRepaired = (await deps.waiting.recount?.(waiting, nowMs)) ?? 0;
  const report = { waiting: waiting.length, resumed: 0, expired: 0, keyStopped: 0, listingReads: 0, slotsRepaired };
  if (waiting.length === 0) return report;
  const canContinue = opts.canContinue ?? (() => true);

  // A revoked or expired key's waiting tasks fail with `key <name> revoked` (issue 29 §4): nothing it
  // started that has not spent yet goes on. One key read per sweep (cached), only when keys wait.
  const stopped = new Set<string>();
  if (deps.keys) {
    const names = [...new Set(waiting.flatMap((w) => (w.key_name !== undefined ? [w.key_name] : [])))];
    const texts = new Map<string, string>();
    for (const name of names) {
      const text = await deps.keys(name, Math.floor(nowMs / 1000));
      if (text !== undefined) texts.set(name, text);
    }
    for (const task of waiting) {
      const text = task.key_name === undefined ? undefined : texts.get(task.key_name);
      if (text === undefined) continue;
      stopped.add(task.task_id);
      if (!canContinue()) return report;
      if (await endWaitingTask(deps, task, failure(text), nowMs)) report.keyStopped += 1;
    }
  }

  // A pending entry (its first search still running) is not expired with its wait: only once that
  // first execution must have ended (its soft limit later), so an order it is placing is never left
  // to a task this sweep failed. Its place is given back then, and at the latest once that execution
  // is over (its soft deadline, then the rest of its hard limit: issue 38 §1), as when its first
  // search failed and nothing turned the entry into a wait.
  const firstSearchEnd = (w: WaitingTask): number => Math.floor(w.accepted_at / 1000) + opts.softLimitSeconds;
  const endsAt = (w: WaitingTask): number =>
    (w.pending ? Math.min(w.waiting_until, firstSearchEnd(w)) + opts.softLimitSeconds : w.waiting_until) * 1000;
  for (const task of waiting.filter((w) => !stopped.has(w.task_id) && nowMs >= endsAt(w))) {
    if (!canContinue()) return report;
    if (await endWaitingTask(deps, task, expiredResult(task), nowMs)) report.expired += 1;
  }

  // A task the cap or a budget holds keeps its place but is not tried (no listing read for it, no resume).
  const live = queued(waiting).filter(
    (w) => !stopped.has(w.task_id) && nowMs < w.waiting_until * 1000 && !isHeld(w, nowMs),
  );
  if (live.length === 0) return report;
  report.listingReads += 1;
  const servers = await deps.marketplace.listServers();
  // One read for the sweep: hosts avoided relay-wide, and per key (issue 38 §3).
  const avoidances: HostAvoidances = deps.hosts
    ? await deps.hosts.avoidances(nowMs)
    : { relay: new Set(), byKey: new Map() };
  const taken = new Set<number>();
  // GPU types whose queue resumed a task back from a hold: it goes alone this sweep, so the tasks
  // behind it do not race it for the one order the cap may allow (first come, first served).
  const alone = new Set<string>();
  for (const task of live) {
    if (!canContinue()) break;
    if (alone.has(queueKey(task.request.gpu_type))) continue;
    const candidates = serversFor(task, servers, taken, avoidedFor(avoidances, task.key_name ?? DEFAULT_KEY_NAME));
    if (candidates.length === 0) continue;
    // The listing is an index read (eventually consistent): the entry must still be this round's
    // before a server is claimed for it (one consistent read per task about to be resumed).
    if ((await deps.waiting.get(task.task_id))?.round !== task.round) continue;
    let claimed: number | undefined;
    for (const server of candidates) {
      taken.add(server.id);
      if (await deps.claims.claim(server.id, task.task_id, nowMs, CLAIM_TTL_SECONDS)) {
        claimed = server.id;
        break;
      }
    }
    if (claimed === undefined) continue;
    const record = await deps.tasks.get(task.task_id);
    if (!record || FINAL_STATES.includes(record.state)) {
      await deps.waiting.remove(task.task_id, task.round);
      await deps.claims.release(claimed, task.task_id);
      continue;
    }
    // Started before the entry is removed: a start whose removal fails is repeated next sweep under
    // the same execution name, which starts nothing. A removal that finds the entry gone (cancelled
    // meanwhile) is too late to stop the start; the resumed FindServer finds the task final and stops.
    await deps.workflow.start(
      task.task_id,
      resumedInput(record, task, claimed, nowMs, opts.softLimitSeconds),
      resumedExecutionName(task.task_id, task.round),
    );
    await deps.waiting.remove(task.task_id, task.round);
    report.resumed += 1;
    if (task.held_until !== undefined) alone.add(queueKey(task.request.gpu_type));
  }
  return report;
};

// ---- cancel-task --------------------------------------------------------------------------------

export const CANCEL_TASK_REQUIRED = 'task_id required';
/** The failure a cancelled standing order ends with (delivered to its own callback_url). */
export const CANCELLED_WHILE_WAITING = 'cancelled while waiting for a server';
export const notWaitingText = (taskId: string): string => `task ${taskId} is not waiting`;

/**
 * Ends a waiting standing order: whoever removes its queue entry (this job, or the watch serving or
 * expiring it) decides; the cancelled task gets its one result (failure CANCELLED_WHILE_WAITING).
 */
export const runCancelTask = async (
  input: CancelTaskInput,
  deps: {
    readonly waiting: Pick<WaitingTasks, 'get' | 'remove'>;
    readonly tasks: TaskRepository;
    readonly notifier: Notifier;
  },
  nowMs: number,
): Promise<CancelTaskSuccess | FailureResult> => {
  const record = await deps.tasks.get(input.task_id);
  if (!record || record.kind !== 'create-order' || FINAL_STATES.includes(record.state))
    return failure(notWaitingText(input.task_id));
  // An admitted task whose first search is still running is not waiting yet (issue 29 §5).
  const entry = await deps.waiting.get(input.task_id);
  if (!entry || entry.pending) return failure(notWaitingText(input.task_id));
  if (!(await deps.waiting.remove(input.task_id, entry.round))) return failure(notWaitingText(input.task_id));
  const url = typeof record.request.callback_url === 'string' ? record.request.callback_url : undefined;
  await completeTask(
    deps,
    { task_id: input.task_id, origin: record.origin, callback_url: url },
    failure(CANCELLED_WHILE_WAITING),
    nowMs,
  );
  return { success: true, task_id: input.task_id, state: 'cancelled' };
};
