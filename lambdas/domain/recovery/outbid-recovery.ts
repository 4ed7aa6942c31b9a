/**
 * Outbid recovery (issue 23 item 1), run by the fleet watch in the sweep that sees a spot order stop:
 * `rebid` raises the bid through set_spot_price in steps the marketplace accepts, never above the
 * caller's max_price (USD per hour, converted to the order's currency and period with the server's
 * own rates), until the order runs again or the ceiling is reached; `replace` starts a replacement
 * (a new order for the same request on another server, through the create-order workflow);
 * `rebid_then_replace` replaces when rebidding failed. One recovery per order: a conditional claim.
 * Every step is reported once (deterministic event ids, claimed like the other lifecycle events).
 *
 * Pure rules and the use case; time arrives as `now` (Unix seconds).
 */
import type { HostRecords } from '../hosts/host-records';
import { MarketplaceRejectedError } from '../errors';
import {
  hasLease,
  marketplacePriceText,
  spendTaskOf,
  type OrderEvent,
  type OutboundEvent,
  type TrackedOrder,
} from '../leases/lease';
import type { ExtensionSpend } from '../leases/lease-jobs';
import { budgetExceededText } from '../teams/spend-budget';
import { DEFAULT_KEY_NAME } from '../teams/caller-keys';
import type { EventSender, LeaseStore } from '../leases/lease-ports';
import type { Order, Server } from '../marketplace-types';
import { rebids, replaces } from './on-outbid';
import type { MarketplaceClient, Notifier } from '../ports';
import type { TaskHistoryEntry } from '../task';
import { marketplacePriceUsdPerHour, usdPerHourPerUnit } from '../usd-per-hour';

/** The relay's own raise per step, as a fraction of the current bid (a smaller step the marketplace states wins). */
export const REBID_STEP_FRACTION = 0.1;
/** set_spot_price calls one recovery makes at most (accepted and refused); then the ceiling counts as reached. */
export const MAX_REBID_CALLS = 30;

/** Significant digits of a bid (as the spot bid rule: binary noise off, tiny coin prices kept). */
const roundBid = (price: number): number => Number(price.toPrecision(10));

/**
 * The caller's max_price (USD per hour) as a bid in the order's currency per the marketplace's period,
 * from the server's own rates (usd-per-hour.ts); undefined when the server states no rate for it.
 */
export const bidCeiling = (
  server: Pick<Server, 'price'> | undefined,
  currency: string,
  maxPriceUsdPerHour: number,
): number | undefined => {
  const rate = server ? usdPerHourPerUnit(server, currency) : undefined;
  if (rate === undefined) return undefined;
  // Rounded down to 10 significant digits: the ceiling is never above max_price.
  const value = maxPriceUsdPerHour / rate;
  const scale = 10 ** (10 - Math.ceil(Math.log10(value)));
  return Math.floor(value * scale) / scale;
};

/** The next bid: one step up from `price`, at most `ceiling`. */
export const nextBid = (price: number, step: number, ceiling: number): number =>
  Math.min(ceiling, roundBid(price + step));

// ---- events and texts ---------------------------------------------------------------------------

const event = (id: string, body: Omit<OrderEvent, 'occurred_at'>, now: number): OutboundEvent => ({
  id,
  body: { ...body, occurred_at: now },
});

export const outbidEvent = (order: TrackedOrder, since: number, now: number): OutboundEvent =>
  event(
    `outbid:${order.order_id}:${since}`,
    { event: 'order.outbid', order_id: order.order_id, task_id: order.task_id },
    now,
  );

export const rebidEvent = (
  order: TrackedOrder,
  oldPrice: number,
  newPrice: number,
  currency: string,
  now: number,
): OutboundEvent =>
  event(
    `rebid:${order.order_id}:${oldPrice}:${newPrice}`,
    {
      event: 'order.rebid',
      order_id: order.order_id,
      task_id: order.task_id,
      old_price: oldPrice,
      new_price: newPrice,
      currency,
    },
    now,
  );

export const recoveryFailedEvent = (
  order: Pick<TrackedOrder, 'order_id' | 'task_id'>,
  reason: string,
  now: number,
): OutboundEvent =>
  event(
    `recovery_failed:${order.order_id}`,
    { event: 'order.recovery_failed', order_id: order.order_id, task_id: order.task_id, reason },
    now,
  );

export const replacedEvent = (
  taskId: string,
  fromOrderId: number,
  toOrderId: number,
  sshConnection: string,
  now: number,
): OutboundEvent =>
  event(
    `replaced:${fromOrderId}:${toOrderId}`,
    {
      event: 'order.replaced',
      order_id: toOrderId,
      task_id: taskId,
      from_order_id: fromOrderId,
      to_order_id: toOrderId,
      ssh_connection: sshConnection,
    },
    now,
  );

export const outbidText = (orderId: number, mode: string): string =>
  `Order ${orderId} was outbid (spot): recovering (${mode})`;
export const rebidText = (orderId: number, oldPrice: number, newPrice: number, currency: string): string =>
  `Order ${orderId}: bid raised from ${oldPrice} to ${marketplacePriceText(newPrice, currency, undefined)}`;
export const recoveryFailedText = (orderId: number, reason: string): string =>
  `Order ${orderId}: outbid recovery failed: ${reason}`;
export const replacedText = (fromOrderId: number, toOrderId: number, ssh: string): string =>
  `Order ${fromOrderId} was replaced by order ${toOrderId}. ${ssh}`.trim();

export const ceilingReachedText = (ceiling: number, currency: string, maxPrice: number): string =>
  `the bid reached its ceiling of ${marketplacePriceText(ceiling, currency, maxPrice)} (max_price) and the order did not run again`;

// ---- the use case ---------------------------------------------------------------------------------

/** What one sweep's settling of replacement rounds did (./outbid-replacement.ts). */
export interface ReplacementSweep {
  /** Rounds under way at the start of the sweep. */
  readonly pending: number;
  /** Rounds whose order took over (order.replaced), and rounds that placed none (order.recovery_failed). */
  readonly replaced: number;
  readonly failed: number;
  readonly eventsSent: number;
  readonly marketplaceCalls: number;
  /** Lost orders whose cancel failed: retried on the next sweep. */
  readonly cancelFailures: readonly { readonly order_id: number; readonly reason: string }[];
}

/** Replaces lost orders through the create-order workflow (./outbid-replacement.ts builds it; only the fleet watch loads that). */
export interface Replacer {
  /** Starts a replacement round; resolves false when nothing could be started (the reason says why). */
  replace(
    order: TrackedOrder,
    lost: Order,
    now: number,
  ): Promise<{ readonly started: true } | { readonly started: false; readonly reason: string }>;
  /** Settles the rounds that ended: the new order takes over (order.replaced), or order.recovery_failed. Once each. */
  settle(now: number, canContinue?: () => boolean): Promise<ReplacementSweep>;
}

export interface OutbidRecoveryDeps {
  readonly leases: Pick<LeaseStore, 'claimEvent'>;
  readonly marketplace: Pick<MarketplaceClient, 'listOrders' | 'listServers' | 'setSpotPrice'>;
  readonly notifier: Pick<Notifier, 'chat'>;
  readonly events: EventSender;
  /** The placing task's history (GET /webhook/tasks/{id}). Absent: not recorded. */
  readonly history?: (taskId: string, entry: TaskHistoryEntry) => Promise<void>;
  /** Absent: `replace` reports order.recovery_failed. */
  readonly replacer?: Replacer;
  /** The relay's host records (issue 31 §2): the outbid is counted on the lost order's host. Absent: not counted. */
  readonly hosts?: Pick<HostRecords, 'record'>;
  /** Spending (issue 29 §3): each raise of a rebid is reserved first, as a set-spot-price's. Absent: not reserved. */
  readonly spend?: Pick<ExtensionSpend, 'limitUsdPerDay' | 'onReserved' | 'clock'> & {
    readonly store: Pick<ExtensionSpend['store'], 'reprice' | 'unprice' | 'repriced'>;
  };
}

export interface RecoveryOutcome {
  readonly outcome: 'running' | 'replacing' | 'failed' | 'skipped';
  readonly setSpotPriceCalls: number;
  readonly eventsSent: number;
  readonly marketplaceCalls: number;
}

type RebidResult =
  | { readonly running: true; readonly calls: number; readonly reads: number }
  | { readonly running: false; readonly reason: string; readonly calls: number; readonly reads: number };

const reasonOf = (error: unknown): string => (error instanceof Error ? error.message : String(error));

/** Raises the bid step by step until the order runs again, the ceiling is reached, or a refusal ends it. */
const rebid = async (
  deps: OutbidRecoveryDeps,
  order: TrackedOrder,
  lost: Order,
  now: number,
  report: (e: OutboundEvent, text?: string) => Promise<void>,
): Promise<RebidResult> => {
  let calls = 0;
  let reads = 0;
  if (order.max_price === undefined) return { running: false, reason: 'no max_price to bid up to', calls, reads };
  let server: Server | undefined;
  try {
    reads += 1;
    server = (await deps.marketplace.listServers()).find((s) => s.id === lost.renting_server);
  } catch (error) {
    return {
      running: false,
      reason: `the listing could not be read for the server's rates: ${reasonOf(error)}`,
      calls,
      reads,
    };
  }
  const ceiling = bidCeiling(server, lost.currency, order.max_price);
  if (ceiling === undefined)
    return {
      running: false,
      reason: `server ${lost.renting_server} states no USD rate for ${lost.currency}: max_price cannot be converted`,
      calls,
      reads,
    };
  let price = lost.price;
  let step = price * REBID_STEP_FRACTION;
  const placedBy = spendTaskOf(order);
  const hoursLeft = hasLease(order) && !order.ended ? Math.max(0, order.expires_at - now) / 3600 : 0;
  while (calls < MAX_REBID_CALLS && price < ceiling) {
    const next = nextBid(price, step, ceiling);
    // Each raise is reserved before the marketplace sees it (issue 29 §3): over a budget, no raise.
    const changeId = `outbid-${lost.order_id}-${next}`;
    if (deps.spend) {
      const usdPerHour = marketplacePriceUsdPerHour(server, lost.currency, next) as number;
      const reserved = await deps.spend.store.reprice(
        placedBy,
        { id: changeId, usd_per_hour: usdPerHour, hours_left: hoursLeft },
        deps.spend.limitUsdPerDay,
        now,
      );
      if (!reserved.ok) {
        const relayWide = order.key === undefined || order.key === 'default';
        return { running: false, reason: budgetExceededText(reserved.refusal, { relayWide }), calls, reads };
      }
      if (reserved.tracked && reserved.usd > 0)
        deps.spend.onReserved?.(reserved.usd, reserved.used_today, order.key ?? 'default');
    }
    calls += 1;
    try {
      await deps.marketplace.setSpotPrice(lost.order_id, next);
    } catch (error) {
      // Not raised: its reservation is given back.
      await deps.spend?.store.unprice(placedBy, changeId).catch(() => undefined);
      const maxStep = error instanceof MarketplaceRejectedError ? error.details.max_step : undefined;
      if (error instanceof MarketplaceRejectedError && error.reason === 'exceeded_max_step') {
        // The marketplace states its step: use it (half the relay's own when it does not say).
        step = typeof maxStep === 'number' && maxStep > 0 && maxStep < next - price ? maxStep : (next - price) / 2;
        continue;
      }
      return { running: false, reason: `set_spot_price ${next} refused: ${reasonOf(error)}`, calls, reads };
    }
    await deps.spend?.store.repriced(placedBy, changeId, deps.spend.clock?.() ?? now).catch(() => undefined);
    await report(
      rebidEvent(order, price, next, lost.currency, now),
      rebidText(lost.order_id, price, next, lost.currency),
    );
    price = next;
    reads += 1;
    const now_ = (await deps.marketplace.listOrders({ returnCompleted: true })).find(
      (o) => o.order_id === lost.order_id,
    );
    if (!now_ || now_.status === 'expired')
      return { running: false, reason: `order ${lost.order_id} ended while rebidding`, calls, reads };
    if (now_.status === 'running') return { running: true, calls, reads };
  }
  return { running: false, reason: ceilingReachedText(ceiling, lost.currency, order.max_price), calls, reads };
};

/**
 * Recovers one outbid order, once (claim `recovery:<order id>`): reports order.outbid, rebids and/or
 * starts a replacement as `order.on_outbid` says, and reports order.recovery_failed when nothing
 * more will be tried. `since` names the outbid occurrence (the status change's start).
 */
export const recoverOutbid = async (
  deps: OutbidRecoveryDeps,
  order: TrackedOrder,
  lost: Order,
  opts: { readonly now: number; readonly since: number },
): Promise<RecoveryOutcome> => {
  const { now } = opts;
  const mode = order.on_outbid;
  let eventsSent = 0;
  if (!mode || !(await deps.leases.claimEvent(`recovery:${order.order_id}`, now))) {
    return { outcome: 'skipped', setSpotPriceCalls: 0, eventsSent, marketplaceCalls: 0 };
  }
  const report = async (e: OutboundEvent, text?: string): Promise<void> => {
    if (text) await deps.notifier.chat(text);
    if (deps.history) {
      const { event: name, occurred_at: at, order_id: orderId, task_id: _task, ...rest } = e.body;
      await deps.history(order.task_id, { at, event: name, order_id: orderId, ...rest }).catch(() => undefined);
    }
    if (!order.callback_url || !(await deps.leases.claimEvent(e.id, now))) return;
    if (await deps.events.send(order.callback_url, e.id, e.body)) eventsSent += 1;
  };
  await report(outbidEvent(order, opts.since, now), outbidText(order.order_id, mode));
  // Once per outbid order (after the recovery claim); best effort, like the history.
  await deps.hosts
    ?.record(lost.renting_server, { kind: 'outbid' }, now * 1000, order.key ?? DEFAULT_KEY_NAME)
    .catch(() => undefined);

  let calls = 0;
  let reads = 0;
  let reason: string | undefined;
  if (rebids(mode)) {
    const result = await rebid(deps, order, lost, now, report);
    calls = result.calls;
    reads = result.reads;
    if (result.running)
      return { outcome: 'running', setSpotPriceCalls: calls, eventsSent, marketplaceCalls: calls + reads };
    reason = result.reason;
  }
  if (replaces(mode)) {
    const started = deps.replacer
      ? await deps.replacer.replace(order, lost, now)
      : { started: false as const, reason: 'replacement is not available here' };
    if (started.started)
      return { outcome: 'replacing', setSpotPriceCalls: calls, eventsSent, marketplaceCalls: calls + reads };
    reason = reason ? `${reason}; replacement not started: ${started.reason}` : started.reason;
  }
  await report(
    recoveryFailedEvent(order, reason ?? 'nothing to try', now),
    recoveryFailedText(order.order_id, reason ?? 'nothing to try'),
  );
  return { outcome: 'failed', setSpotPriceCalls: calls, eventsSent, marketplaceCalls: calls + reads };
};
