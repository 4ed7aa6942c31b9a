/**
 * Order leases and the fleet watch (issue 14), as pure rules: request field rules (their schemas are
 * in lambdas/http/requests.ts), lease arithmetic, the watch diff, lifecycle events with deterministic
 * ids, chat texts and the spot price decrease rule; the sweep's rule is in lease-sweep.ts. No clock,
 * no environment, no I/O: time arrives as `now` (Unix seconds).
 */
import { MIN_HOURS, minHoursText } from '../requests/number-bounds';
import type { ParseOutcome } from '../requests/request-rules';
import type { Order, Server } from '../marketplace-types';
import type { OnOutbid } from '../recovery/on-outbid';

// ---- limits and defaults --------------------------------------------------------------------

/** Longest lease (and longest single extension) a request may ask for: 30 days. */
export const MAX_LEASE_HOURS = 720;
/** `LEASE_WARNING_SECONDS` when unset. */
export const DEFAULT_LEASE_WARNING_SECONDS = 600;
/** `WATCH_INTERVAL_SECONDS` when unset. */
export const DEFAULT_WATCH_INTERVAL_SECONDS = 60;
/** The marketplace allows one spot price decrease per this many seconds per order. */
export const SPOT_DECREASE_INTERVAL_SECONDS = 600;

// ---- request fields -------------------------------------------------------------------------

export const MAX_HOURS_ERROR = `max_hours must be a number between 0 and ${MAX_LEASE_HOURS}`;
export const EXTEND_REQUIRED_ERROR = 'order_id and hours required';
/** A present `hours` that is not a number in (0, 720]. Absent or null `hours` is EXTEND_REQUIRED_ERROR. */
export const HOURS_ERROR = `hours must be a number between 0 and ${MAX_LEASE_HOURS}`;
export const SPOT_PRICE_REQUIRED_ERROR = 'order_id and desired_price required';
/** A present `desired_price` that is not a positive number. */
export const DESIRED_PRICE_ERROR = 'desired_price must be a positive number';
/**
 * The range a `desired_price` can take in the marketplace's unit (an amount of the order currency per
 * day): from one satoshi (the smallest unit of the smallest-valued coin taken, 1e-8 BTC) to ten
 * million (far above a day of the dearest server in the cheapest coin: an 8-GPU H100 server at
 * $3/h per card is about 0.5 million CLORE a day). Anything outside is a typing or unit mistake.
 */
export const MIN_DESIRED_PRICE = 0.00000001;
export const MAX_DESIRED_PRICE = 10_000_000;
export const DESIRED_PRICE_RANGE_ERROR =
  'desired_price must be between 0.00000001 and 10000000 (order currency per day)';
/** A raise to more than this many times the order's current price is refused by the relay (a likely unit mistake). */
export const MAX_SPOT_RAISE_FACTOR = 10;

/** A lease length in hours: a finite number, at least MIN_HOURS (0.001, issue 38 §6) and ≤ 720; fractions allowed. */
export const isLeaseHours = (value: unknown): value is number =>
  typeof value === 'number' && Number.isFinite(value) && value >= MIN_HOURS && value <= MAX_LEASE_HOURS;

/**
 * The 400 text of a lease length that is not {@link isLeaseHours}: `tooSmall` for a number in
 * (0, MIN_HOURS) (issue 38 §6: 1e-200 hours is "between 0 and 720" but no lease), else `otherwise`.
 */
export const leaseHoursProblem = (value: unknown, field: string, otherwise: string): string =>
  typeof value === 'number' && value > 0 && value < MIN_HOURS ? minHoursText(field) : otherwise;

/**
 * `max_hours` of create-order: absent or null → undefined (DEFAULT_MAX_HOURS applies), a valid
 * number → itself, anything else (strings included) → MAX_HOURS_ERROR.
 */
export const parseMaxHours = (value: unknown): ParseOutcome<number | undefined> => {
  if (value === undefined || value === null) return { ok: true, value: undefined };
  return isLeaseHours(value)
    ? { ok: true, value }
    : { ok: false, error: leaseHoursProblem(value, 'max_hours', MAX_HOURS_ERROR) };
};

/** The lease of a new order: the request's `max_hours`, else DEFAULT_MAX_HOURS, else none. */
export const resolveMaxHours = (
  requested: number | undefined,
  defaultMaxHours: number | undefined,
): number | undefined => requested ?? defaultMaxHours;

/** The extend-order and set-spot-price task inputs and results live with the other tasks' (task.ts). */
export type { ExtendOrderInput, ExtendOrderSuccess, SetSpotPriceInput, SetSpotPriceSuccess } from '../task';

// ---- lease arithmetic -----------------------------------------------------------------------

/** Hours → whole seconds, rounded to the nearest second (0.1 h = 360 s; 0.7 × 3600 is 2520.0000000000005). */
export const hoursToSeconds = (hours: number): number => Math.round(hours * 3600);

/** End of a lease of `maxHours` counted from readiness (Unix seconds). */
export const leaseExpiresAt = (readyAtSeconds: number, maxHours: number): number =>
  readyAtSeconds + hoursToSeconds(maxHours);

/** New end of an extended lease: `max(now, current end) + hours`; an order without a lease counts from now. */
export const extendLease = (currentEnd: number | undefined, nowSeconds: number, hours: number): number =>
  Math.max(nowSeconds, currentEnd ?? nowSeconds) + hoursToSeconds(hours);

/** A server can carry the lease when its maximum rental time (`mrl`, hours) is not below it. No lease: any server. */
export const serverFitsLease = (server: Pick<Server, 'mrl'>, maxHours: number | undefined): boolean =>
  maxHours === undefined || server.mrl >= maxHours;

// ---- what the watch keeps -------------------------------------------------------------------

/** An order the relay placed (or extended): who to tell about it. */
export interface WatchedOrder {
  readonly order_id: number;
  /** The task that placed it; lifecycle events carry it. */
  readonly task_id: string;
  /** The placing request's callback_url: where lifecycle events go. */
  readonly callback_url?: string;
  /** A spot order: when it stops, the chat names it "possibly outbid". */
  readonly spot?: boolean;
  /** The caller key whose task placed it (issue 24); absent = the default key. */
  readonly key?: string;
  /** What to do when this spot order is outbid (issue 23, ./outbid-recovery.ts); absent = notify. */
  readonly on_outbid?: Exclude<OnOutbid, 'notify'>;
  /** The placing request's max_price (USD per hour): the ceiling of a rebid. */
  readonly max_price?: number;
  /**
   * The task whose spending reservation covers this order (issue 24), when it is not `task_id`: an
   * outbid replacement (issue 23) is placed, and reserved, by a round of its own.
   */
  readonly spend_task_id?: string;
  /**
   * When the relay cancelled the order (Unix seconds, fractions kept: issue 38 §9): a cancel-order, or
   * the cancel of an outbid order a replacement took over. The settlement's end when the sweep sees
   * the order gone later; absent when the order ended on its own (the sweep's time is then the bound).
   */
  readonly cancelled_at?: number;
}

/** The task whose spending reservation covers the order. */
export const spendTaskOf = (order: Pick<WatchedOrder, 'task_id' | 'spend_task_id'>): string =>
  order.spend_task_id ?? order.task_id;

/** Why a lease stopped being swept. */
export type LeaseEnd = 'cancelled' | 'order_gone';

/** A watched order with a lease. */
export interface Lease extends WatchedOrder {
  /** Unix seconds. */
  readonly expires_at: number;
  /** Hours granted in total (the original lease plus every extension). */
  readonly hours: number;
  /** The `expires_at` a warning was posted for: an extension moves the end and re-arms the warning. */
  readonly warned_for?: number;
  /** Set while one sweep holds the right to cancel (Unix seconds of the claim). */
  readonly cancel_claimed_at?: number;
  readonly ended?: LeaseEnd;
}

export type TrackedOrder = WatchedOrder | Lease;

export const hasLease = (order: TrackedOrder | undefined): order is Lease =>
  order !== undefined && typeof (order as Lease).expires_at === 'number';

/** The status the watch last saw for an order, and since when (Unix seconds). */
export interface WatchEntry {
  readonly status: string;
  readonly since: number;
  readonly spot?: boolean;
}

/** `to` of an order that is no longer in the active `my_orders` list. */
export const GONE = 'gone';

/** Present in `my_orders` and not expired. */
export const isActiveOrder = (order: Pick<Order, 'status'>): boolean => order.status !== 'expired';

/** The active orders of a `my_orders` answer by id (the first of duplicates wins). */
export const activeOrdersById = (orders: readonly Order[]): ReadonlyMap<number, Order> => {
  const byId = new Map<number, Order>();
  for (const order of orders) if (isActiveOrder(order) && !byId.has(order.order_id)) byId.set(order.order_id, order);
  return byId;
};

// ---- the watch diff -------------------------------------------------------------------------

export interface StatusChange {
  readonly order_id: number;
  readonly from: string;
  /** The current status, or GONE. */
  readonly to: string;
  /** When `from` was first seen: with from/to it names this change once, whichever sweep sees it. */
  readonly since: number;
  readonly spot: boolean;
  /** `gone` or `expired`: the watch stops following the order. */
  readonly terminal: boolean;
}

const STOPPED = new Set(['paused', 'expired', GONE]);

/** A stop: paused, expired or gone, or (live dialect) a running order that went offline (creating_order again). */
export const isStop = (from: string, to: string): boolean =>
  STOPPED.has(to) || (from === 'running' && to === 'creating_order');

/**
 * Status changes of the watched orders against one `my_orders` answer, by order id. Orders the
 * relay did not place (not in `watched`) are ignored; a watched order missing from the list, or
 * listed as expired, is terminal.
 */
export const diffWatch = (watched: ReadonlyMap<number, WatchEntry>, orders: readonly Order[]): StatusChange[] => {
  const listed = new Map<number, Order>();
  for (const order of orders) if (!listed.has(order.order_id)) listed.set(order.order_id, order);
  const changes: StatusChange[] = [];
  for (const [orderId, entry] of [...watched].sort(([a], [b]) => a - b)) {
    const order = listed.get(orderId);
    const to = order ? order.status : GONE;
    if (to === entry.status) continue;
    changes.push({
      order_id: orderId,
      from: entry.status,
      to,
      since: entry.since,
      spot: entry.spot === true || order?.type === 'spot',
      terminal: to === GONE || to === 'expired',
    });
  }
  return changes;
};

// ---- events ---------------------------------------------------------------------------------

export type OrderEventName =
  | 'order.lease_expiring'
  | 'order.lease_expired'
  | 'order.status_changed'
  | 'order.orphan_cancelled'
  | 'order.outbid'
  | 'order.rebid'
  | 'order.replaced'
  | 'order.recovery_failed';

/** The JSON body POSTed to the placing task's callback_url. Times are Unix seconds. */
export interface OrderEvent {
  readonly event: OrderEventName;
  readonly order_id: number;
  readonly task_id: string;
  readonly occurred_at: number;
  readonly lease_expires_at?: number;
  readonly from?: string;
  readonly to?: string;
  /** order.rebid: the bid before and after, in the order's currency per day (the marketplace's unit). */
  readonly old_price?: number;
  readonly new_price?: number;
  readonly currency?: string;
  /** order.replaced: the lost order, the new one and how to reach it. */
  readonly from_order_id?: number;
  readonly to_order_id?: number;
  readonly ssh_connection?: string;
  /** order.recovery_failed: why. */
  readonly reason?: string;
}

/** An event and its id (`X-Webhook-Id`, and the dedupe key in the table). */
export interface OutboundEvent {
  readonly id: string;
  readonly body: OrderEvent;
}

/**
 * Deterministic event ids: the same occurrence gets the same id in every sweep and on every retry.
 * A lease event is named by the end it is about (an extension makes a new occurrence); a status
 * change by its from/to and when `from` was first seen.
 */
export const leaseEventId = (kind: 'lease_expiring' | 'lease_expired', orderId: number, expiresAt: number): string =>
  `${kind}:${orderId}:${expiresAt}`;
export const statusEventId = (change: Pick<StatusChange, 'order_id' | 'from' | 'to' | 'since'>): string =>
  `status_changed:${change.order_id}:${change.from}:${change.to}:${change.since}`;

export const leaseExpiringEvent = (lease: Lease, now: number): OutboundEvent => ({
  id: leaseEventId('lease_expiring', lease.order_id, lease.expires_at),
  body: {
    event: 'order.lease_expiring',
    order_id: lease.order_id,
    task_id: lease.task_id,
    occurred_at: now,
    lease_expires_at: lease.expires_at,
  },
});

export const leaseExpiredEvent = (lease: Lease, now: number): OutboundEvent => ({
  id: leaseEventId('lease_expired', lease.order_id, lease.expires_at),
  body: {
    event: 'order.lease_expired',
    order_id: lease.order_id,
    task_id: lease.task_id,
    occurred_at: now,
    lease_expires_at: lease.expires_at,
  },
});

export const statusChangedEvent = (change: StatusChange, order: TrackedOrder, now: number): OutboundEvent => ({
  id: statusEventId(change),
  body: {
    event: 'order.status_changed',
    order_id: change.order_id,
    task_id: order.task_id,
    occurred_at: now,
    ...(hasLease(order) ? { lease_expires_at: order.expires_at } : {}),
    from: change.from,
    to: change.to,
  },
});

// ---- chat texts -----------------------------------------------------------------------------

/** Hours as people write them: 2, 0.5, 0.3 (not 0.30000000000000004). */
export const formatHours = (hours: number): string => String(Number(hours.toPrecision(6)));

/** Posted when the relay cancelled an order at the end of its lease. */
export const leaseExpiredText = (orderId: number, hours: number): string =>
  `Order ${orderId} cancelled: its ${formatHours(hours)} h lease ended`;

/** Posted LEASE_WARNING_SECONDS before the end; minutes rounded up, at least 1. */
export const leaseExpiringText = (orderId: number, expiresAt: number, now: number): string =>
  `Order ${orderId}: its lease ends in ${Math.max(1, Math.ceil((expiresAt - now) / 60))} min`;

/** Posted on a status change; a spot order that stops is named "possibly outbid". */
export const statusChangedText = (change: Pick<StatusChange, 'order_id' | 'from' | 'to' | 'spot'>): string => {
  const what =
    change.to === GONE
      ? `Order ${change.order_id} is gone from the active orders (was ${change.from})`
      : `Order ${change.order_id} is now ${change.to} (was ${change.from})`;
  return change.spot && isStop(change.from, change.to) ? `${what}: spot order, possibly outbid` : what;
};

export const orderNotActiveText = (orderId: number): string => `order ${orderId} is not active`;
export const notSpotOrderText = (orderId: number): string => `order ${orderId} is not a spot order`;

// ---- spot price -----------------------------------------------------------------------------

/** A lower price than the order's current one: the marketplace limits those to one per 600 s. */
export const isSpotDecrease = (currentPrice: number, desiredPrice: number): boolean => desiredPrice < currentPrice;

/**
 * Why the relay refuses a decrease itself (no marketplace call), or undefined when it may go ahead:
 * its previous decrease on the order was less than 600 s ago.
 */
export const spotDecreaseRefusal = (
  orderId: number,
  lastDecreaseAt: number | undefined,
  now: number,
): string | undefined => {
  if (lastDecreaseAt === undefined) return undefined;
  const ago = Math.max(0, now - lastDecreaseAt);
  if (ago >= SPOT_DECREASE_INTERVAL_SECONDS) return undefined;
  return `spot price of order ${orderId} was lowered ${ago} s ago; the marketplace allows one decrease per ${SPOT_DECREASE_INTERVAL_SECONDS} s (retry in ${SPOT_DECREASE_INTERVAL_SECONDS - ago} s)`;
};

/** A price in the marketplace's unit, for texts: `1540 CLORE-Blockchain per day ($0.21/hr)`. */
export const marketplacePriceText = (price: number, currency: string, usdPerHour: number | null | undefined): string =>
  `${price}${currency ? ` ${currency}` : ''} per day${typeof usdPerHour === 'number' ? ` ($${usdPerHour}/hr)` : ''}`;

/**
 * Why the relay refuses a raise itself, or undefined when it may go ahead: more than
 * MAX_SPOT_RAISE_FACTOR × the current price is far likelier a unit mistake (USD per hour typed for
 * a coin per day) than a bid, and the marketplace accepts every raise.
 */
export const spotRaiseRefusal = (
  orderId: number,
  current: { readonly price: number; readonly usdPerHour: number | null },
  desired: { readonly price: number; readonly usdPerHour: number | null },
  currency: string,
): string | undefined => {
  if (!(current.price > 0) || desired.price <= current.price * MAX_SPOT_RAISE_FACTOR) return undefined;
  return (
    `spot price ${marketplacePriceText(desired.price, currency, desired.usdPerHour)} for order ${orderId} is more than ${MAX_SPOT_RAISE_FACTOR} × its current ` +
    `${marketplacePriceText(current.price, currency, current.usdPerHour)}; desired_price is in the order currency per day, not USD per hour (raise in steps if meant)`
  );
};

/** The failure text of a set_spot_price the marketplace refused: its reason and the numbers that came with it. */
export const spotPriceRefusedText = (
  orderId: number,
  desiredPrice: number,
  reason: string,
  details: { readonly min_price?: number; readonly max_step?: number; readonly time_to_lowering?: number } = {},
  /** too_low_price: the lowest price the server takes, in the order's currency per day, and as USD per hour. */
  minimum?: { readonly price: number; readonly currency: string; readonly usdPerHour: number | null },
): string => {
  const numbers = (['min_price', 'max_step', 'time_to_lowering'] as const)
    .filter((k) => typeof details[k] === 'number')
    .map((k) => `${k} ${details[k]}`);
  const least = minimum
    ? `; the minimum is ${minimum.price} ${minimum.currency} per day${minimum.usdPerHour === null ? '' : ` ($${minimum.usdPerHour}/h)`}`
    : '';
  return `marketplace refused spot price ${desiredPrice} for order ${orderId}: ${reason}${numbers.length ? ` (${numbers.join(', ')})` : ''}${least}`;
};
