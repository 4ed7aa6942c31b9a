/**
 * Outbid recovery by replacement (issue 23 item 1): `replace`, and `rebid_then_replace` once rebidding
 * failed. The fleet watch starts a replacement round, a task of its own (`<task id>-r<lost order id>`)
 * run by the unchanged create-order workflow (pacing, quota, readiness, cancel on timeout) for the
 * same request (GPU type, image, ports, env, max_price, the lease that is left), never on the lost
 * order's server. Each later sweep settles the rounds that ended: a ready order takes over the lost
 * one (the lease moves to it, the lost order is cancelled, `order.replaced` is reported); a round
 * that placed nothing reports `order.recovery_failed` and leaves the lost order as it was. Each
 * event once (claimed like the other lifecycle events).
 *
 * Only the fleet watch loads this file (its handler builds the Replacer): the job worker's bundle,
 * which shares ./fleet-watch.ts, does not carry it. Pure use cases; time arrives as `now` (Unix seconds).
 */
import { workflowOrigin, workflowRequest } from '../requests/accept-task';
import type { KeyCheck } from '../teams/caller-keys';
import { definedFields } from '../defined-fields';
import { TaskAlreadyExistsError } from '../errors';
import { hasLease, spendTaskOf, type OutboundEvent, type TrackedOrder, type WatchedOrder } from '../leases/lease';
import type { EventSender, LeaseStore } from '../leases/lease-ports';
import type { Order } from '../marketplace-types';
import {
  recoveryFailedEvent,
  recoveryFailedText,
  replacedEvent,
  replacedText,
  type Replacer,
  type ReplacementSweep,
} from './outbid-recovery';
import type { CreateOrderWorkflowInput, MarketplaceClient, Notifier, TaskRepository, WorkflowStarter } from '../ports';
import type { SpendStore } from '../teams/spend-budget';
import { FINAL_STATES, type CreateOrderInput, type CreateOrderSuccess, type TaskRecord } from '../task';

/** A replacement round under way: what the sweep that settles it needs. */
export interface PendingReplacement {
  /** The round's own task (replacementTaskId), run by the create-order workflow. */
  readonly task_id: string;
  /** The task whose order was lost: events, history and the task view are about it. */
  readonly parent_task_id: string;
  readonly from_order_id: number;
  readonly from_server_id: number;
  /** Unix seconds. */
  readonly started_at: number;
}

/** The replacement rounds under way (one item: the fleet watch reads it in one call each sweep). */
export interface PendingReplacements {
  add(entry: PendingReplacement): Promise<void>;
  list(): Promise<readonly PendingReplacement[]>;
  /** True for the one caller that removed the entry. */
  remove(taskId: string): Promise<boolean>;
}

export interface ReplacerDeps {
  readonly tasks: Pick<TaskRepository, 'get' | 'create' | 'update'> &
    Partial<Pick<TaskRepository, 'replacementEnv' | 'appendHistory' | 'sealedAccess'>>;
  readonly pending: PendingReplacements;
  readonly workflow: WorkflowStarter;
  readonly leases: Pick<LeaseStore, 'get' | 'track' | 'endLease' | 'watched' | 'setStatus' | 'claimEvent'>;
  readonly marketplace: Pick<MarketplaceClient, 'listOrders' | 'cancelOrder'>;
  readonly notifier: Pick<Notifier, 'chat'>;
  readonly events: EventSender;
  /** Spending (issue 24): the lost order's reservation is settled when the watch cancels it. Absent: not settled. */
  readonly spend?: Pick<SpendStore, 'settle'>;
  /** Issue 29 §4: no replacement round for a task whose caller key was revoked (or expired). Absent: not checked. */
  readonly keys?: KeyCheck;
}

export interface ReplacerSettings {
  readonly poll_interval_seconds: number;
  readonly ready_timeout_seconds: number;
  /** The replacement execution's soft limit (SOFT_TIME_LIMIT_SECONDS). */
  readonly soft_limit_seconds: number;
}

/**
 * The Replacer the fleet watch runs, in the two halves docs/outbid-recovery.md "Replacing" tells:
 * `replace` starts a replacement round for a lost order (startReplacement: the replaced task checked,
 * its kept env and access, the round's request for the lease that is left, its record and workflow
 * input, then the round launched); `settle`, in each later sweep, finishes the rounds that ended
 * (settleRounds: a ready round's order takes over the lost one and `order.replaced` is reported; a
 * round that placed nothing reports `order.recovery_failed`).
 */
export const createReplacer = (deps: ReplacerDeps, settings: ReplacerSettings): Replacer => ({
  replace: (order, lost, now) => startReplacement(deps, settings, order, lost, now),
  settle: (now, canContinue = () => true) => settleRounds(deps, now, canContinue),
});

// ---- replace: starting a round ------------------------------------------------------------------

type ReplaceOutcome = Awaited<ReturnType<Replacer['replace']>>;
/** Why no round starts. */
type NotStarted = Extract<ReplaceOutcome, { readonly started: false }>;

/** What a round starts from: the replaced task's record and the container env kept for it (when it had one). */
interface RoundSource {
  readonly parent: TaskRecord;
  readonly env: Readonly<Record<string, string>> | undefined;
  /** The replaced task's access secrets, still sealed (issue 37). */
  readonly sealedAccess?: string;
}

/** Starts a replacement round for a lost order: checked, its request, record and workflow input built, then launched. */
const startReplacement = async (
  deps: ReplacerDeps,
  settings: ReplacerSettings,
  order: TrackedOrder,
  lost: Order,
  now: number,
): Promise<ReplaceOutcome> => {
  const found = await replacedTask(deps, order, now);
  if ('started' in found) return found;
  const { parent } = found;
  const source = await keptEnv(deps, order, parent);
  if ('started' in source) return source;
  const taskId = replacementTaskId(order.task_id, order.order_id);
  const request = replacementRequest(parent.request, order, now);
  const record = roundRecord(taskId, request, parent, now);
  const input = roundInput(settings, taskId, request, parent, order, lost, now);
  const entry: PendingReplacement = {
    task_id: taskId,
    parent_task_id: order.task_id,
    from_order_id: order.order_id,
    from_server_id: lost.renting_server,
    started_at: now,
  };
  return launchRound(deps, record, source, entry, input);
};

/** The replaced task a round may start from, or why none may: its lease is over, its task is gone, or its key was revoked. */
const replacedTask = async (
  deps: ReplacerDeps,
  order: TrackedOrder,
  now: number,
): Promise<Pick<RoundSource, 'parent'> | NotStarted> => {
  const over = leaseOverReason(order, now);
  if (over) return { started: false, reason: over };
  const parent = await deps.tasks.get(order.task_id);
  if (!parent || parent.kind !== 'create-order')
    return { started: false, reason: `task ${order.task_id} is no longer stored` };
  // A revoked key starts nothing more (issue 29 §4): order.recovery_failed says `key <name> revoked`.
  const keyName = parent.origin.caller?.key;
  const stopped = keyName !== undefined && deps.keys ? await deps.keys(keyName, now) : undefined;
  if (stopped !== undefined) return { started: false, reason: stopped };
  return { parent };
};

/** Why a lost order is not replaced: its lease (if any) is over. Undefined when a replacement may start. */
export const leaseOverReason = (order: TrackedOrder, now: number): string | undefined =>
  hasLease(order) && (order.ended !== undefined || order.expires_at <= now)
    ? `the lease of order ${order.order_id} has ended`
    : undefined;

/** The container env kept for the replaced task when its request named one, or why the round cannot start without it. */
const keptEnv = async (
  deps: ReplacerDeps,
  order: TrackedOrder,
  parent: TaskRecord,
): Promise<RoundSource | NotStarted> => {
  const names = parent.request.env_names;
  const env = Array.isArray(names) && names.length > 0 ? await deps.tasks.replacementEnv?.(order.task_id) : undefined;
  if (Array.isArray(names) && names.length > 0 && env === undefined)
    return { started: false, reason: `the container env of task ${order.task_id} is no longer kept` };
  // The same access as the lost order (issue 37): its sealed secrets, copied without opening them.
  const sealed = parent.request.access_sealed;
  const sealedAccess =
    Array.isArray(sealed) && sealed.length > 0 ? await deps.tasks.sealedAccess?.(order.task_id) : undefined;
  if (Array.isArray(sealed) && sealed.length > 0 && sealedAccess === undefined)
    return { started: false, reason: `the access secrets of task ${order.task_id} are no longer kept` };
  return { parent, env, ...(sealedAccess !== undefined ? { sealedAccess } : {}) };
};

/** The task id (and execution name) of the round replacing `orderId` of `taskId`: one per lost order. */
export const replacementTaskId = (taskId: string, orderId: number): string => `${taskId}-r${orderId}`;

/**
 * The replacement round's request, from the replaced task's recorded one: the same GPU type, image,
 * ports, env (names here; values kept beside the record, the replacement's copy sealed), price, currency and on_outbid; the lease that is left; no
 * wait (a replacement that finds no server fails at once); no callback_url (the watch reports).
 */
export const replacementRequest = (
  recorded: TaskRecord['request'],
  order: TrackedOrder,
  now: number,
): Record<string, unknown> => {
  const {
    callback_url: _url,
    price_alert_task_id: _alert,
    wait_seconds: _wait,
    max_hours: _hours,
    ...rest
  } = recorded as Record<string, unknown>;
  const hours = remainingLeaseHours(order, now);
  return { ...rest, ...(hours !== undefined ? { max_hours: hours } : {}) };
};

/** The lease a replacement asks for, in hours: what is left of the lost order's (whole seconds, rounded up). Undefined: no lease. */
export const remainingLeaseHours = (order: TrackedOrder, now: number): number | undefined =>
  hasLease(order) ? Math.max(1, order.expires_at - now) / 3600 : undefined;

/** The round's task record: queued, with the caller's key and source (its quota and budget apply) and no Slack response_url. */
const roundRecord = (taskId: string, request: Record<string, unknown>, parent: TaskRecord, now: number): TaskRecord => {
  const nowIso = new Date(now * 1000).toISOString();
  return {
    task_id: taskId,
    kind: 'create-order',
    state: 'queued',
    request,
    // The caller's key and source (its quota and budget apply); no Slack response_url: the watch reports.
    origin: workflowOrigin(parent.origin),
    created_at: nowIso,
    updated_at: nowIso,
  };
};

/** The create-order workflow's input for the round: its request, its timing, and the order (and server) it replaces. */
const roundInput = (
  settings: ReplacerSettings,
  taskId: string,
  request: Record<string, unknown>,
  parent: TaskRecord,
  order: TrackedOrder,
  lost: Order,
  now: number,
): CreateOrderWorkflowInput => ({
  task_id: taskId,
  request: workflowRequest(request as unknown as CreateOrderInput),
  origin: workflowOrigin(parent.origin),
  timing: {
    poll_interval_seconds: settings.poll_interval_seconds,
    ready_timeout_seconds: settings.ready_timeout_seconds,
    soft_deadline: now + settings.soft_limit_seconds,
  },
  replaces: { task_id: order.task_id, order_id: order.order_id, server_id: lost.renting_server },
});

/** Stores the round, lists it as pending and starts its execution; when any of it fails, the round is pending no more. */
const launchRound = async (
  deps: ReplacerDeps,
  record: TaskRecord,
  source: RoundSource,
  entry: PendingReplacement,
  input: CreateOrderWorkflowInput,
): Promise<ReplaceOutcome> => {
  try {
    await storeRound(deps, record, source.env, source.sealedAccess);
    await deps.pending.add(entry);
    await deps.workflow.start(entry.task_id, input, entry.task_id);
  } catch (error) {
    await deps.pending.remove(entry.task_id).catch(() => undefined);
    return { started: false, reason: `the replacement could not be started: ${reasonOf(error)}` };
  }
  return { started: true };
};

/** Stores the round's task (with the kept env sealed for it); a round already stored by a repeated start is kept. */
const storeRound = async (
  deps: ReplacerDeps,
  record: TaskRecord,
  env: Readonly<Record<string, string>> | undefined,
  sealedAccess?: string,
): Promise<void> => {
  try {
    await deps.tasks.create(record, {
      ...(env ? { orderEnv: env, keepForReplacement: true } : {}),
      ...(sealedAccess !== undefined ? { sealedAccess } : {}),
    });
  } catch (error) {
    // A start repeated after its answer was lost: the round exists; starting it again is a no-op.
    if (!(error instanceof TaskAlreadyExistsError)) throw error;
  }
};

// ---- settle: finishing the rounds that ended ------------------------------------------------------

/** What one settling of the rounds shares: its dependencies, time, counters and the lost orders' listing. */
interface Settling {
  readonly deps: ReplacerDeps;
  readonly now: number;
  readonly counts: { -readonly [K in Exclude<keyof ReplacementSweep, 'cancelFailures'>]: ReplacementSweep[K] } & {
    readonly cancelFailures: { order_id: number; reason: string }[];
  };
  /** The active orders by id, from one my_orders read made the first time a round needs it. */
  readonly activeOrders: () => Promise<ReadonlyMap<number, Order>>;
}

/** Settles the rounds that ended, oldest first, while time is left. */
const settleRounds = async (deps: ReplacerDeps, now: number, canContinue: () => boolean): Promise<ReplacementSweep> => {
  const settling = startSettling(deps, now);
  const pending = await pendingRounds(deps);
  settling.counts.pending = pending.length;
  for (const entry of pending) {
    if (!canContinue()) break;
    await settleRound(settling, entry);
  }
  return settling.counts;
};

/** Starts a settling: zero counts, and the active orders read once, when first asked for. */
const startSettling = (deps: ReplacerDeps, now: number): Settling => {
  const counts: Settling['counts'] = {
    pending: 0,
    replaced: 0,
    failed: 0,
    eventsSent: 0,
    marketplaceCalls: 0,
    cancelFailures: [],
  };
  let active: ReadonlyMap<number, Order> | undefined;
  const activeOrders = async (): Promise<ReadonlyMap<number, Order>> => {
    if (!active) {
      counts.marketplaceCalls += 1;
      active = new Map(
        (await deps.marketplace.listOrders()).filter((o) => o.status !== 'expired').map((o) => [o.order_id, o]),
      );
    }
    return active;
  };
  return { deps, now, counts, activeOrders };
};

/** The rounds under way, oldest first. */
const pendingRounds = async (deps: ReplacerDeps): Promise<PendingReplacement[]> =>
  [...(await deps.pending.list())].sort((a, b) => a.started_at - b.started_at);

/** Settles one round if it ended: order.recovery_failed when it placed no ready order, else the new order takes over. */
const settleRound = async (settling: Settling, entry: PendingReplacement): Promise<void> => {
  const { deps } = settling;
  const round = await deps.tasks.get(entry.task_id);
  // Still running: the workflow's own deadlines (and its safety net) end every round.
  if (round && !FINAL_STATES.includes(round.state)) return;
  const lost: TrackedOrder = (await deps.leases.get(entry.from_order_id)) ?? (await untracked(deps, entry));
  const result = round?.result;
  if (isReadyOrder(result)) await takeOver(settling, entry, lost, result);
  else await failRound(settling, entry, lost, round);
};

/** A round that ended with a ready order (its create-order success). */
const isReadyOrder = (result: TaskRecord['result']): result is CreateOrderSuccess =>
  result !== undefined && 'ssh_connection' in result && result.success === true;

/** The lost order when its watch record is gone (its retention ran out): reported to the task's callback_url all the same. */
const untracked = async (deps: ReplacerDeps, entry: PendingReplacement): Promise<TrackedOrder> => {
  const url = (await deps.tasks.get(entry.parent_task_id))?.request.callback_url;
  return {
    order_id: entry.from_order_id,
    task_id: entry.parent_task_id,
    ...(typeof url === 'string' && url.length > 0 ? { callback_url: url } : {}),
  };
};

/** A ready round's order takes over: watched in the lost one's place, the lost one cancelled and closed, order.replaced. */
const takeOver = async (
  settling: Settling,
  entry: PendingReplacement,
  lost: TrackedOrder,
  result: CreateOrderSuccess,
): Promise<void> => {
  const { deps, now, counts } = settling;
  // The new order takes over: watched under the replaced task, with the lease the lost order has now.
  await deps.leases.track(carried(lost, result.order_id, entry.task_id), {
    now,
    status: result.status,
    ...(hasLease(lost) ? { lease: { expires_at: lost.expires_at, hours: lost.hours } } : {}),
  });
  if (!(await cancelLostOrder(settling, entry))) return;
  await closeLostOrder(settling, entry, lost);
  await deps.tasks.update(entry.parent_task_id, { order_id: result.order_id, server_id: result.server_id }, now * 1000);
  counts.eventsSent += await reportOnce(
    deps,
    lost,
    replacedEvent(entry.parent_task_id, entry.from_order_id, result.order_id, result.ssh_connection, now),
    replacedText(entry.from_order_id, result.order_id, result.ssh_connection),
    now,
  );
  await deps.pending.remove(entry.task_id);
  counts.replaced += 1;
};

/** What the replaced task's watch record carries over to the new order (the lease is passed apart). */
const carried = (order: TrackedOrder, orderId: number, roundTaskId: string): WatchedOrder => ({
  order_id: orderId,
  task_id: order.task_id,
  // The round reserved the new order's spending (issue 24): its settlement and extensions go there.
  spend_task_id: roundTaskId,
  ...definedFields(order, ['callback_url', 'spot', 'key', 'on_outbid', 'max_price']),
});

/** Cancels the lost order while it is still listed; false when the cancel failed (the round stays for the next sweep). */
const cancelLostOrder = async (
  { deps, counts, activeOrders }: Settling,
  entry: PendingReplacement,
): Promise<boolean> => {
  if (!(await activeOrders()).has(entry.from_order_id)) return true;
  counts.marketplaceCalls += 1;
  try {
    await deps.marketplace.cancelOrder(entry.from_order_id);
  } catch (error) {
    // The next sweep tries again (tracking the new order again changes nothing).
    counts.cancelFailures.push({ order_id: entry.from_order_id, reason: reasonOf(error) });
    return false;
  }
  return true;
};

/** Closes the lost order: its lease ended, its spending settled, and it leaves the watch. */
const closeLostOrder = async (
  { deps, now }: Settling,
  entry: PendingReplacement,
  lost: TrackedOrder,
): Promise<void> => {
  if (hasLease(lost) && lost.ended === undefined) await deps.leases.endLease(entry.from_order_id, 'cancelled', now);
  // It leaves the watch here, so the status diff never settles it: settled now (idempotent; a failure is the ledger's to retry).
  await deps.spend?.settle(spendTaskOf(lost), { ended_at: now }, now).catch(() => undefined);
  const watchEntry = (await deps.leases.watched()).get(entry.from_order_id);
  if (watchEntry) await deps.leases.setStatus(entry.from_order_id, watchEntry, undefined, now);
};

/** A round that placed no order: order.recovery_failed once, and the round is pending no more (the lost order stays as it was). */
const failRound = async (
  { deps, now, counts }: Settling,
  entry: PendingReplacement,
  lost: TrackedOrder,
  round: TaskRecord | undefined,
): Promise<void> => {
  const result = round?.result;
  const why = result && 'error' in result ? result.error : round ? 'it ended without an order' : 'its task is gone';
  const reason = `no replacement was placed: ${why}`;
  counts.eventsSent += await reportOnce(
    deps,
    lost,
    recoveryFailedEvent(lost, reason, now),
    recoveryFailedText(lost.order_id, reason),
    now,
  );
  await deps.pending.remove(entry.task_id);
  counts.failed += 1;
};

// ---- shared by both halves ---------------------------------------------------------------------------

/** Reports one step once: the event claim decides, then chat, task history and callback_url. */
const reportOnce = async (
  deps: ReplacerDeps,
  order: Pick<TrackedOrder, 'task_id' | 'callback_url'>,
  e: OutboundEvent,
  text: string,
  now: number,
): Promise<number> => {
  if (!(await deps.leases.claimEvent(e.id, now))) return 0;
  await deps.notifier.chat(text);
  const { event: name, occurred_at: at, order_id: orderId, task_id: _task, ...rest } = e.body;
  await deps.tasks
    .appendHistory?.(order.task_id, { at, event: name, order_id: orderId, ...rest }, now * 1000)
    .catch(() => undefined);
  if (!order.callback_url) return 0;
  return (await deps.events.send(order.callback_url, e.id, e.body)) ? 1 : 0;
};

/** Why a step failed, for a reason or a cancel failure. */
const reasonOf = (error: unknown): string => (error instanceof Error ? error.message : String(error));
