/**
 * The fleet watch (issue 14) as a use case: the sweep that expires leases and reports status changes
 * (the extend-order and set-spot-price jobs are in lease-jobs.ts). Dependencies arrive in one object; time as `now`
 * (Unix seconds).
 */

import { spendTaskOf } from './lease';
import {
  DEFAULT_LEASE_WARNING_SECONDS,
  activeOrdersById,
  diffWatch,
  hasLease,
  isStop,
  leaseExpiredEvent,
  leaseExpiredText,
  leaseExpiringEvent,
  leaseExpiringText,
  statusChangedEvent,
  statusChangedText,
  type Lease,
  type OutboundEvent,
  type StatusChange,
  type TrackedOrder,
  type WatchEntry,
} from './lease';
import type { EventSender, LeaseStore } from './lease-ports';
import { planLeaseSweep } from './lease-sweep';
import { settleableIntents, settleIntents } from './orphan-orders';
import type { Order } from '../marketplace-types';
import type { MarketplaceClient, Notifier, PlacementIntent, PlacementIntents, TaskRepository } from '../ports';
import { recoverOutbid, type OutbidRecoveryDeps } from '../recovery/outbid-recovery';
import { serveWaitingTasks, type StandingOrderDeps } from '../recovery/standing-orders';
import type { Settlement, SpendStore } from '../teams/spend-budget';
import { spendSettler, type SpendSettler } from '../teams/spend-settlement';

/** Leases handled per sweep; the rest wait for the next one (cancels are paced at 1 request/s). */
export const DEFAULT_SWEEP_LIMIT = 100;
/** ORDER_VISIBLE_TIMEOUT_SECONDS' default (contract/settings.ts). */
const DEFAULT_VISIBLE_TIMEOUT_SECONDS = 60;
/** A cancel claim older than this belongs to a sweep that died: another sweep may take over. */
export const DEFAULT_CANCEL_CLAIM_STALE_SECONDS = 300;

export interface FleetWatchDeps {
  readonly leases: LeaseStore;
  readonly marketplace: Pick<MarketplaceClient, 'listOrders' | 'cancelOrder'>;
  readonly notifier: Pick<Notifier, 'chat'>;
  readonly events: EventSender;
  /** Placement intents and the tasks behind them: orders nobody kept (./orphan-orders.ts). Absent: not swept. */
  readonly intents?: PlacementIntents;
  readonly tasks?: Pick<TaskRepository, 'get'> & Partial<Pick<TaskRepository, 'dropReplacementEnv'>>;
  /** The standing-order queue and what serving it takes (issue 23). Absent: not served. */
  readonly standing?: StandingOrderDeps;
  /** Spending (issue 24): an order that ended is settled (./spend-settlement.ts). Absent: not settled. */
  readonly spend?: Pick<SpendStore, 'settle'>;
  /** Outbid recovery (issue 23, ./outbid-recovery.ts): what rebidding and replacing take. Absent: outbid orders are only reported. */
  readonly recovery?: Pick<OutbidRecoveryDeps, 'marketplace' | 'history' | 'replacer' | 'spend' | 'hosts'>;
}

export interface SweepOptions {
  readonly now: number;
  /** @default DEFAULT_LEASE_WARNING_SECONDS */
  readonly warningSeconds?: number;
  /** @default DEFAULT_SWEEP_LIMIT */
  readonly limit?: number;
  /** @default DEFAULT_CANCEL_CLAIM_STALE_SECONDS */
  readonly cancelClaimStaleSeconds?: number;
  /**
   * Asked before each lease and each status change is handled: false stops the sweep there, and what
   * is left waits for the next sweep untouched (counted in `deferred`). The handler answers from the
   * invocation's remaining time, so a slow marketplace defers work instead of timing the function out.
   * @default () => true
   */
  readonly canContinue?: () => boolean;
  /** ORDER_VISIBLE_TIMEOUT_SECONDS: how long a task looks for its order before the watch may. @default 60 */
  readonly visibleTimeoutSeconds?: number;
  /** The soft limit a resumed standing order's execution gets (SOFT_TIME_LIMIT_SECONDS). @default 300 */
  readonly softLimitSeconds?: number;
}

/** Counters of one sweep, for metrics, alarms and the bench. */
export interface SweepReport {
  /** Leases the due query returned (ending within the warning window or ended). */
  readonly due: number;
  readonly warned: number;
  /** Orders this sweep cancelled (cancel_order succeeded). */
  readonly cancelled: number;
  /** cancel_order calls that failed; the lease is retried on the next sweep. Alarm on it. */
  readonly failedCancels: number;
  /** Expired leases closed without a call because the order was already gone. */
  readonly closed: number;
  /** Expired leases another sweep was already cancelling. */
  readonly skippedClaims: number;
  readonly statusChanges: number;
  readonly eventsSent: number;
  readonly eventsFailed: number;
  /** my_orders reads (0 or 1) plus cancel_order calls. */
  readonly marketplaceCalls: number;
  /** Orders the relay placed that no task kept, cancelled by this sweep (issue 20, item 5). */
  readonly orphansCancelled: number;
  /** Items read from the lease store during the sweep. */
  readonly tableReads: number;
  /** Standing orders waiting at the start of the sweep, resumed with a server, and failed because their wait ended (issue 23). */
  readonly waitingTasks: number;
  readonly waitingResumed: number;
  readonly waitingExpired: number;
  /** Waiting slots the sweep's recount repaired (issue 38 §1). */
  readonly waitingSlotsRepaired: number;
  /** Outbid orders whose recovery this sweep ran (issue 23), and the set_spot_price calls it made. */
  readonly recoveries: number;
  readonly rebidCalls: number;
  /** Replacement rounds under way at the start of the sweep, and those this sweep settled (order.replaced / order.recovery_failed). */
  readonly replacementsPending: number;
  readonly replaced: number;
  readonly replacementsFailed: number;
  /** Leases and status changes left for the next sweep because `canContinue` said stop. */
  readonly deferred: number;
  /** Why each failed cancel failed, for the log. */
  readonly cancelFailures: readonly { readonly order_id: number; readonly reason: string }[];
  /** Orders whose spending was settled by this sweep (issue 24), for the SpendSettledUsd metric. */
  readonly settlements?: readonly Settlement[];
}

/**
 * One sweep of the fleet watch, its steps in the order docs/leases.md tells them ("One sweep, in
 * order"): the standing orders waiting for a server are served and the outbid replacement rounds that
 * ended are settled; then one `my_orders` read (through the shared read cache) covers every due lease
 * and every watched order: expired leases of active orders are cancelled once (claimCancel) and
 * reported (chat + `order.lease_expired`); leases in the warning window are warned once
 * (`order.lease_expiring`); status changes are reported (chat + `order.status_changed`) and an outbid
 * order is recovered; an order that is gone or expired leaves the watch; orders the relay placed that
 * no task kept are cancelled. With nothing due, watched or to settle, my_orders is not read. Fails
 * only when my_orders cannot be read.
 */
export const sweepFleet = async (deps: FleetWatchDeps, options: SweepOptions): Promise<SweepReport> => {
  const sweep = startSweep(deps, options);
  await serveStandingOrders(sweep);
  await settleReplacementRounds(sweep);
  const work = await readSweepWork(sweep);
  if (isIdle(work)) return finishSweep(sweep);
  const orders = await readOrders(sweep);
  const active = activeOrdersById(orders);
  const plan = planLeaseSweep(work.due, sweep.now, sweep.warningSeconds);
  const cancelled = await expireLeases(sweep, plan.expire, active, work.watched);
  await warnLeases(sweep, plan.warn, active);
  await reportStatusChanges(sweep, work.watched, cancelled, orders, active);
  await cancelOrphans(sweep, work.intents, orders, work.watched);
  return finishSweep(sweep);
};

/** What the steps of one sweep share: its dependencies and options, its counters, the spend settler and the time gate. */
interface Sweep {
  readonly deps: FleetWatchDeps;
  readonly options: SweepOptions;
  readonly now: number;
  readonly warningSeconds: number;
  readonly canContinue: () => boolean;
  readonly report: Counters;
  readonly settle: SpendSettler;
  /** Lease-store items read before the sweep began: `tableReads` counts from there. */
  readonly readsBefore: number;
  /** Asked before each lease and status change: false once out of time, and then the `left` ones count as deferred. */
  readonly mayGoOn: (left: number) => boolean;
}

/** What a sweep has to look at: the due leases, the watched orders and the placement intents ready to settle. */
interface SweepWork {
  readonly due: readonly Lease[];
  readonly watched: ReadonlyMap<number, WatchEntry>;
  readonly intents: readonly PlacementIntent[];
}

type Counters = { -readonly [K in Exclude<keyof SweepReport, 'cancelFailures' | 'settlements'>]: SweepReport[K] } & {
  cancelFailures: { order_id: number; reason: string }[];
};

const emptyReport = (): Counters => ({
  due: 0,
  warned: 0,
  cancelled: 0,
  failedCancels: 0,
  closed: 0,
  skippedClaims: 0,
  statusChanges: 0,
  orphansCancelled: 0,
  eventsSent: 0,
  eventsFailed: 0,
  marketplaceCalls: 0,
  tableReads: 0,
  deferred: 0,
  cancelFailures: [],
  waitingTasks: 0,
  waitingResumed: 0,
  waitingExpired: 0,
  waitingSlotsRepaired: 0,
  recoveries: 0,
  rebidCalls: 0,
  replacementsPending: 0,
  replaced: 0,
  replacementsFailed: 0,
});

/** Starts a sweep: the options' defaults, empty counters, the spend settler and the out-of-time gate. */
const startSweep = (deps: FleetWatchDeps, options: SweepOptions): Sweep => {
  const warningSeconds = options.warningSeconds ?? DEFAULT_LEASE_WARNING_SECONDS;
  const canContinue = options.canContinue ?? (() => true);
  const report = emptyReport();
  const settle = spendSettler(deps);
  const readsBefore = deps.leases.itemsRead();
  // Out of time: the rest (leases and status changes) is left for the next sweep, untouched.
  let stopped = false;
  const mayGoOn = (left: number): boolean => {
    if (!stopped && !canContinue()) stopped = true;
    if (stopped) report.deferred += left;
    return !stopped;
  };
  return { deps, options, now: options.now, warningSeconds, canContinue, report, settle, readsBefore, mayGoOn };
};

/** Serves the standing orders waiting for a server (issue 23), when the sweep has their queue. */
const serveStandingOrders = async ({ deps, options, now, canContinue, report }: Sweep): Promise<void> => {
  if (!deps.standing) return;
  // One listing read (through the shared read cache) for every waiting task together.
  const served = await serveWaitingTasks(deps.standing, {
    nowMs: now * 1000,
    softLimitSeconds: options.softLimitSeconds ?? 300,
    canContinue,
  });
  report.waitingTasks = served.waiting;
  report.waitingResumed = served.resumed;
  report.waitingExpired = served.expired;
  report.waitingSlotsRepaired = served.slotsRepaired;
  report.marketplaceCalls += served.listingReads;
};

/** Settles the replacement rounds that ended (issue 23): the new order takes over before the watch list is read. */
const settleReplacementRounds = async ({ deps, now, canContinue, report }: Sweep): Promise<void> => {
  if (!deps.recovery?.replacer) return;
  const settled = await deps.recovery.replacer.settle(now, canContinue);
  report.replacementsPending = settled.pending;
  report.replaced = settled.replaced;
  report.replacementsFailed = settled.failed;
  report.eventsSent += settled.eventsSent;
  report.marketplaceCalls += settled.marketplaceCalls;
  report.failedCancels += settled.cancelFailures.length;
  report.cancelFailures.push(...settled.cancelFailures);
};

/** Reads what the sweep has to look at: the due leases, the watched orders and the settleable placement intents. */
const readSweepWork = async ({ deps, options, now, warningSeconds, report }: Sweep): Promise<SweepWork> => {
  const due = await deps.leases.dueBefore(now + warningSeconds, options.limit ?? DEFAULT_SWEEP_LIMIT);
  const watched = await deps.leases.watched();
  report.due = due.length;
  const intents =
    deps.intents && deps.tasks
      ? settleableIntents(
          await deps.intents.list(),
          now,
          options.visibleTimeoutSeconds ?? DEFAULT_VISIBLE_TIMEOUT_SECONDS,
        )
      : [];
  return { due, watched, intents };
};

/** True when there is nothing to look at: no due lease, no watched order, no intent to settle (my_orders is not read). */
const isIdle = ({ due, watched, intents }: SweepWork): boolean =>
  due.length === 0 && watched.size === 0 && intents.length === 0;

/** Reads my_orders once (through the shared read cache): every later step works from this one answer. */
const readOrders = async ({ deps, report }: Sweep): Promise<readonly Order[]> => {
  report.marketplaceCalls += 1;
  return deps.marketplace.listOrders();
};

/** Expires the leases whose end has passed, in order, while time is left; returns the orders this sweep cancelled. */
const expireLeases = async (
  sweep: Sweep,
  leases: readonly Lease[],
  active: ReadonlyMap<number, Order>,
  watched: ReadonlyMap<number, WatchEntry>,
): Promise<ReadonlySet<number>> => {
  // Orders this sweep cancels leave the watch here, so the next sweep does not report them as gone.
  const handled = new Set<number>();
  for (const [index, lease] of leases.entries()) {
    if (!sweep.mayGoOn(leases.length - index)) break;
    await expireLease(sweep, lease, active, watched, handled);
  }
  return handled;
};

/** Expires one lease: closed when its order is already gone, else claimed once, cancelled and closed. */
const expireLease = async (
  sweep: Sweep,
  lease: Lease,
  active: ReadonlyMap<number, Order>,
  watched: ReadonlyMap<number, WatchEntry>,
  handled: Set<number>,
): Promise<void> => {
  const { deps, now, report } = sweep;
  if (!active.has(lease.order_id)) {
    // Already gone: nothing to cancel; the status diff below reports it.
    if (await deps.leases.endLease(lease.order_id, 'order_gone', now, lease.expires_at)) report.closed += 1;
    return;
  }
  if (!(await claimLeaseCancel(sweep, lease))) {
    report.skippedClaims += 1;
    return;
  }
  handled.add(lease.order_id);
  if (await cancelLeaseOrder(sweep, lease)) await closeCancelledLease(sweep, lease, watched);
};

/** Claims an expired lease's cancel, so that one sweep cancels it (a claim gone stale may be taken over). */
const claimLeaseCancel = ({ deps, options, now }: Sweep, lease: Lease): Promise<boolean> =>
  deps.leases.claimCancel(
    lease.order_id,
    lease.expires_at,
    now,
    options.cancelClaimStaleSeconds ?? DEFAULT_CANCEL_CLAIM_STALE_SECONDS,
  );

/** Cancels an expired lease's order; false when the cancel failed (counted, claim released, retried next sweep). */
const cancelLeaseOrder = async ({ deps, now, report }: Sweep, lease: Lease): Promise<boolean> => {
  report.marketplaceCalls += 1;
  try {
    await deps.marketplace.cancelOrder(lease.order_id);
  } catch (error) {
    report.failedCancels += 1;
    report.cancelFailures.push({ order_id: lease.order_id, reason: reasonOf(error) });
    await deps.leases.releaseCancel(lease.order_id, now);
    return false;
  }
  return true;
};

/** Closes a lease whose order was just cancelled: ended, kept env dropped, settled, unwatched, reported (order.lease_expired). */
const closeCancelledLease = async (
  sweep: Sweep,
  lease: Lease,
  watched: ReadonlyMap<number, WatchEntry>,
): Promise<void> => {
  const { deps, now, report, settle } = sweep;
  await deps.leases.endLease(lease.order_id, 'cancelled', now, lease.expires_at);
  report.cancelled += 1;
  // The lease ended: the order will not be replaced any more, so its kept env goes (issue 29 §6), and
  // its access secrets (issue 37 §3), of a replacement round's task too.
  await deps.tasks?.dropReplacementEnv?.(lease.task_id).catch(() => undefined);
  if (spendTaskOf(lease) !== lease.task_id)
    await deps.tasks?.dropReplacementEnv?.(spendTaskOf(lease)).catch(() => undefined);
  // Cancelled by the relay just now: what the marketplace billed is read fresh (the listing before the cancel is short of it).
  await settle.order(lease, { ended_at: now, ...(await settle.billed(lease.order_id)) });
  const entry = watched.get(lease.order_id);
  if (entry) await deps.leases.setStatus(lease.order_id, entry, undefined, now);
  await deps.notifier.chat(leaseExpiredText(lease.order_id, lease.hours));
  await sendEvent(sweep, lease, leaseExpiredEvent(lease, now));
};

/** Warns once of each lease in the warning window whose order is active (order.lease_expiring), while time is left. */
const warnLeases = async (
  sweep: Sweep,
  leases: readonly Lease[],
  active: ReadonlyMap<number, Order>,
): Promise<void> => {
  const { deps, now, report } = sweep;
  for (const [index, lease] of leases.entries()) {
    if (!sweep.mayGoOn(leases.length - index)) break;
    if (!active.has(lease.order_id)) continue;
    if (!(await deps.leases.claimWarning(lease.order_id, lease.expires_at))) continue;
    report.warned += 1;
    await deps.notifier.chat(leaseExpiringText(lease.order_id, lease.expires_at, now));
    await sendEvent(sweep, lease, leaseExpiringEvent(lease, now));
  }
};

/** Reports the status changes of the orders still watched (those this sweep cancelled left), while time is left. */
const reportStatusChanges = async (
  sweep: Sweep,
  watched: ReadonlyMap<number, WatchEntry>,
  cancelled: ReadonlySet<number>,
  orders: readonly Order[],
  active: ReadonlyMap<number, Order>,
): Promise<void> => {
  const stillWatched = new Map([...watched].filter(([orderId]) => !cancelled.has(orderId)));
  const changes = diffWatch(stillWatched, orders);
  if (changes.length === 0) return;
  const records = await sweep.deps.leases.getMany(changes.map((c) => c.order_id));
  for (const [index, change] of changes.entries()) {
    if (!sweep.mayGoOn(changes.length - index)) break;
    const prev = stillWatched.get(change.order_id) as WatchEntry;
    await applyStatusChange(sweep, change, prev, records, active);
  }
};

/**
 * When an order the sweep sees gone ended (issue 38 §9): the moment the relay cancelled it, when it
 * did (a cancel-order; after the sweep's start when the cancel landed during the sweep); else the
 * sweep's time, the bound for an order that ended on its own.
 */
export const endedAt = (record: Pick<TrackedOrder, 'cancelled_at'> | undefined, now: number): number =>
  record?.cancelled_at ?? now;

/** One status change: an ended order settled first, the watch moved on, its lease closed, reported, an outbid order recovered. */
const applyStatusChange = async (
  sweep: Sweep,
  change: StatusChange,
  prev: WatchEntry,
  records: ReadonlyMap<number, TrackedOrder>,
  active: ReadonlyMap<number, Order>,
): Promise<void> => {
  const { deps, now, report, settle } = sweep;
  const next: WatchEntry | undefined = change.terminal
    ? undefined
    : { status: change.to, since: now, spot: change.spot };
  // An ended order is settled before it leaves the watch: a failed settlement keeps it watched, so the next sweep retries.
  if (
    change.terminal &&
    !(await settle.order(records.get(change.order_id), {
      ended_at: endedAt(records.get(change.order_id), now),
      ...(await settle.billed(change.order_id)),
    }))
  )
    return;
  if (!(await deps.leases.setStatus(change.order_id, prev, next, now))) return;
  report.statusChanges += 1;
  const record = records.get(change.order_id);
  if (change.terminal && hasLease(record) && !record.ended) {
    if (await deps.leases.endLease(change.order_id, 'order_gone', now)) report.closed += 1;
  }
  await deps.notifier.chat(statusChangedText(change));
  if (record) await sendEvent(sweep, record, statusChangedEvent(change, record, now));
  await recoverIfOutbid(sweep, change, record, active.get(change.order_id));
};

/** A spot order that stopped while still listed was outbid: recovered in this sweep when its request asked for it. */
const recoverIfOutbid = async (
  { deps, now, report }: Sweep,
  change: StatusChange,
  record: TrackedOrder | undefined,
  lost: Order | undefined,
): Promise<void> => {
  if (!deps.recovery || !record?.on_outbid || !lost) return;
  if (!change.spot || change.terminal || !isStop(change.from, change.to)) return;
  const recovery = await recoverOutbid(
    { ...deps.recovery, leases: deps.leases, notifier: deps.notifier, events: deps.events },
    record,
    lost,
    { now, since: change.since },
  );
  if (recovery.outcome !== 'skipped') report.recoveries += 1;
  report.rebidCalls += recovery.setSpotPriceCalls;
  report.eventsSent += recovery.eventsSent;
  report.marketplaceCalls += recovery.marketplaceCalls;
};

/** Cancels the orders the relay placed that no task kept (issue 20, item 5), with the time that is left. */
const cancelOrphans = async (
  sweep: Sweep,
  intents: readonly PlacementIntent[],
  orders: readonly Order[],
  watched: ReadonlyMap<number, WatchEntry>,
): Promise<void> => {
  const { deps, now, report } = sweep;
  if (intents.length === 0 || !deps.intents || !deps.tasks) return;
  const orphans = await settleIntents(
    {
      intents: deps.intents,
      tasks: deps.tasks,
      marketplace: deps.marketplace,
      notifier: deps.notifier,
      events: deps.events,
      leases: deps.leases,
    },
    intents,
    orders,
    new Set(watched.keys()),
    { now, canContinue: () => sweep.mayGoOn(0) },
  );
  report.orphansCancelled += orphans.cancelled;
  report.failedCancels += orphans.failedCancels;
  report.cancelFailures.push(...orphans.cancelFailures);
  report.eventsSent += orphans.eventsSent;
  report.eventsFailed += orphans.eventsFailed;
  report.marketplaceCalls += orphans.marketplaceCalls;
  report.deferred += orphans.deferred;
};

/** The sweep's report: its counters with the settler's my_orders reads, the lease-store reads and the settlements. */
const finishSweep = ({ deps, report, settle, readsBefore }: Sweep): SweepReport => ({
  ...report,
  marketplaceCalls: report.marketplaceCalls + settle.reads(),
  tableReads: deps.leases.itemsRead() - readsBefore,
  ...(settle.settled.length ? { settlements: settle.settled } : {}),
});

// ---- shared by the steps ------------------------------------------------------------------------

/** Sends a lifecycle event to the order's callback_url once (the event claim decides), counted as sent or failed. */
const sendEvent = async (
  { deps, now, report }: Sweep,
  order: TrackedOrder | undefined,
  event: OutboundEvent,
): Promise<void> => {
  if (!order?.callback_url) return;
  if (!(await deps.leases.claimEvent(event.id, now))) return;
  if (await deps.events.send(order.callback_url, event.id, event.body)) report.eventsSent += 1;
  else report.eventsFailed += 1;
};

/** Why a marketplace call failed, for the report's cancelFailures. */
const reasonOf = (error: unknown): string => (error instanceof Error ? error.message : String(error));
