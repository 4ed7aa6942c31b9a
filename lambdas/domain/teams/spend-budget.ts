/**
 * Spending budgets (issue 24 item 2): the relay's SPEND_LIMIT_USD_PER_DAY and a caller key's
 * `budget_usd_per_day`. Before create_order the relay reserves the order's worst case (its USD per
 * hour × its lease hours) against the UTC day; when the order ends the reservation is settled to the
 * actual cost (USD per hour × hours held) and the rest released. Pure rules and the store's port;
 * the DynamoDB adapter is lambdas/adapters/dynamodb/dynamodb-spend-store.ts. Money is USD; times Unix seconds.
 */
import type { TaskCaller } from './caller-keys';
import type { Server } from '../marketplace-types';
import { spotBidFor } from '../leases/spot-bid';
import { marketplacePriceUsdPerHour, usdPerHourPerUnit } from '../usd-per-hour';

/** The 400 of a create-order with neither max_hours nor DEFAULT_MAX_HOURS while a budget applies. */
export const MAX_HOURS_REQUIRED = 'max_hours required under a budget';

/** The UTC day (`YYYY-MM-DD`) of an instant in epoch ms: budgets and the ledger count per UTC day. */
export const utcDay = (epochMs: number): string => new Date(epochMs).toISOString().slice(0, 10);

/** Money as shown to people: `$12.34` (two decimals, rounded half up on the cent). */
export const usdText = (usd: number): string => `$${(Math.round(usd * 100 + Number.EPSILON) / 100).toFixed(2)}`;

/** Amounts are kept to the micro-dollar, so sums in the table stay exact decimals. */
export const roundUsd = (usd: number): number => Math.round(usd * 1e6) / 1e6;

/**
 * Whether a budget applies to a create-order of `caller`: the relay has a daily limit, or the
 * caller's key has its own. Under one, the order needs a lease (max_hours or DEFAULT_MAX_HOURS):
 * without one its worst case is unbounded.
 */
export const budgetApplies = (relayLimit: number | undefined, caller: TaskCaller | undefined): boolean =>
  relayLimit !== undefined || caller?.budget_usd_per_day !== undefined;

/**
 * The failure text of a refused reservation. A key's own budget names the key; the relay's limit is
 * shown only to callers that see every order (the default key, admin keys: `relayWide`): another key
 * is told its own figures, or only that the relay's limit is reached (issue 29 §3).
 */
export const budgetExceededText = (refusal: BudgetRefusal, opts: { readonly relayWide?: boolean } = {}): string => {
  const needs = `; this order needs up to ${usdText(refusal.needed)}`;
  if (refusal.scope === 'key')
    return `budget exceeded: ${usdText(refusal.used)} of ${usdText(refusal.limit)} today (key ${refusal.key})${needs}`;
  if (opts.relayWide !== false)
    return `budget exceeded: ${usdText(refusal.used)} of ${usdText(refusal.limit)} today${needs}`;
  return refusal.key_used !== undefined && refusal.key_limit !== undefined
    ? `budget exceeded: the relay's daily limit is reached (key ${refusal.key}: ${usdText(refusal.key_used)} of ${usdText(refusal.key_limit)} today)${needs}`
    : `budget exceeded: the relay's daily limit is reached (key ${refusal.key}: ${usdText(refusal.key_used ?? 0)} today)${needs}`;
};

// ---- the marketplace's fees -------------------------------------------------------------------

/** The marketplace's fees (RENTER_FEE_PERCENT, ORDER_CREATION_FEE_USD): production charges 5 % and $0.10 per order. */
export interface MarketplaceFees {
  /** Percent of the price, on every hour. */
  readonly renter_fee_percent: number;
  /** USD per order placed. */
  readonly creation_fee_usd: number;
}

export const NO_FEES: MarketplaceFees = { renter_fee_percent: 0, creation_fee_usd: 0 };

/** What an order costs per hour with the renter fee: price × (1 + fee). Pure; for reservations and listings alike. */
export const allInUsdPerHour = (usdPerHour: number, fees: Pick<MarketplaceFees, 'renter_fee_percent'>): number =>
  roundUsd(usdPerHour * (1 + fees.renter_fee_percent / 100));

/** An order's all-in price: USD per hour with the renter fee, plus the creation fee once (what a listing can show). */
export const allInPrice = (
  usdPerHour: number,
  fees: MarketplaceFees,
): { readonly usd_per_hour: number; readonly creation_fee_usd: number } => ({
  usd_per_hour: allInUsdPerHour(usdPerHour, fees),
  creation_fee_usd: fees.creation_fee_usd,
});

/**
 * The fees beside a price, as a listing shows them (issue 31 §6): `($0.33/h with the 5 % renter fee,
 * + $0.10 per order)`; only the fees that are not zero; empty when both are.
 */
export const feesNote = (usdPerHour: number, fees: MarketplaceFees): string => {
  const parts: string[] = [];
  if (fees.renter_fee_percent > 0)
    parts.push(`${usdText(allInUsdPerHour(usdPerHour, fees))}/h with the ${fees.renter_fee_percent} % renter fee`);
  if (fees.creation_fee_usd > 0) parts.push(`+ ${usdText(fees.creation_fee_usd)} per order`);
  return parts.length ? `(${parts.join(', ')})` : '';
};

/**
 * The most an order on `server` can cost per hour, in USD: the on-demand price in the order currency,
 * or for a spot order its bid (1.1 × the spot price, capped at the request's `max_price`: issue 38 §8)
 * in USD. Undefined when the server states neither.
 */
export const orderUsdPerHour = (
  server: Server,
  request: { readonly use_spot: boolean; readonly currency: string; readonly max_price?: number | undefined },
): number | undefined => {
  if (!request.use_spot) {
    const price = server.price.usd_per_hour.on_demand[request.currency];
    return typeof price === 'number' && price > 0 ? price : undefined;
  }
  const cap = request.max_price;
  const bid = spotBidFor(server, request.currency, cap);
  const bidUsd = bid === undefined ? null : marketplacePriceUsdPerHour(server, request.currency, bid);
  // A bid capped at max_price is max_price in USD: the conversion's rounding must not show a cent more.
  const plain = spotBidFor(server, request.currency);
  const listed = server.price.spot[request.currency];
  const capped = cap !== undefined && bid !== undefined && plain !== undefined && bid < plain && bid > (listed ?? 0);
  if (bidUsd !== null && bidUsd > 0) return capped ? Math.min(bidUsd, cap) : bidUsd;
  const spot = server.price.usd_per_hour.spot;
  if (!(typeof spot === 'number' && spot > 0)) return undefined;
  const plainUsd = roundUsd(spot * 1.1);
  return cap !== undefined && plainUsd > cap ? Math.max(spot, cap) : plainUsd;
};

/** The worst case of `hours` at `usdPerHour`, fees included (the creation fee with `creation: true`, once per order). */
export const worstCaseUsd = (
  usdPerHour: number,
  hours: number,
  fees: MarketplaceFees = NO_FEES,
  creation = false,
): number => roundUsd(allInUsdPerHour(usdPerHour, fees) * hours + (creation ? fees.creation_fee_usd : 0));

/**
 * What a raise of an order's price reserves (issue 29 §3): the difference of the new USD per hour and
 * the one reserved so far, fees included, over the lease hours left; nothing for a decrease.
 */
export const raiseUsd = (
  reservedUsdPerHour: number,
  newUsdPerHour: number,
  hoursLeft: number,
  fees: MarketplaceFees = NO_FEES,
): number =>
  newUsdPerHour <= reservedUsdPerHour || hoursLeft <= 0
    ? 0
    : roundUsd((allInUsdPerHour(newUsdPerHour, fees) - allInUsdPerHour(reservedUsdPerHour, fees)) * hoursLeft);

/** The fees a reservation was made with (none on reservations older than the fees). */
export const feesOf = (r: Pick<Reservation, 'renter_fee_percent' | 'creation_fee_usd'>): MarketplaceFees => ({
  renter_fee_percent: r.renter_fee_percent ?? 0,
  creation_fee_usd: r.creation_fee_usd ?? 0,
});

/** The highest USD per hour reserved for an order: its own, or a raise's. */
export const reservedUsdPerHour = (r: Pick<Reservation, 'usd_per_hour' | 'segments'>): number =>
  Math.max(r.usd_per_hour, ...Object.values(r.segments).map((s) => s.usd_per_hour ?? 0));

/**
 * The price steps of an order, in USD per hour from an instant on: its own price from readiness, then
 * each set-spot-price (a raise or a decrease) from when it was made. A step before readiness replaces the start.
 */
export const priceSteps = (
  r: Pick<Reservation, 'usd_per_hour' | 'segments' | 'started_at'>,
): { readonly from: number; readonly usd_per_hour: number }[] => {
  const start = r.started_at ?? 0;
  const steps = Object.values(r.segments)
    .filter((s) => s.usd_per_hour !== undefined)
    .map((s) => ({ from: Math.max(start, s.from ?? s.at), usd_per_hour: s.usd_per_hour as number, id: s.id }))
    .sort((a, b) => a.from - b.from || a.id.localeCompare(b.id))
    .map(({ from, usd_per_hour }) => ({ from, usd_per_hour }));
  return [{ from: start, usd_per_hour: r.usd_per_hour }, ...steps];
};

/** USD of `[start, end]` (Unix seconds) over price steps, the renter fee included: price × hours per step. */
export const steppedCostUsd = (
  steps: readonly { readonly from: number; readonly usd_per_hour: number }[],
  start: number,
  end: number,
  fees: Pick<MarketplaceFees, 'renter_fee_percent'>,
): number => {
  let usd = 0;
  for (const [i, step] of steps.entries()) {
    const from = Math.max(start, step.from);
    const to = Math.min(end, steps[i + 1]?.from ?? Infinity);
    if (to > from) usd += step.usd_per_hour * ((to - from) / 3600);
  }
  return roundUsd(usd * (1 + fees.renter_fee_percent / 100));
};

/** Hours of the price period of a marketplace that reports `spend`: production's, per day (marketplace-live.md). */
export const SPEND_PERIOD_HOURS = 24;

/**
 * The USD one unit of the order's coin was worth when the order was placed, from the listing: 1 for
 * USD-Blockchain, else the server's USD per hour over its price in that coin, times the hours of the
 * marketplace's price period (production's `spend` is in coin, its prices per day). Undefined when the
 * listing states no rate.
 */
export const usdPerCoin = (
  server: Pick<Server, 'price'>,
  currency: string,
  hoursPerPeriod: number,
): number | undefined => {
  if (currency === 'USD-Blockchain') return 1;
  const rate = usdPerHourPerUnit(server, currency);
  return rate === undefined ? undefined : rate * hoursPerPeriod;
};

/**
 * One reserved part of an order: the create-order's lease, one extension, or one set-spot-price
 * (charged to the day it was made).
 */
export interface SpendSegment {
  /** `s<server>` for the order's reservation, `x<task>` for an extension, `r<task>` for a price change. */
  readonly id: string;
  readonly day: string;
  readonly usd: number;
  readonly hours: number;
  /** When it was reserved (settlement charges the cost to segments in this order). */
  readonly at: number;
  /** A price change: the order's USD per hour from `from` (else `at`) on (a new price segment). */
  readonly usd_per_hour?: number;
  /** When the marketplace took the price change (Unix seconds, fractions kept): its price segment starts here. */
  readonly from?: number;
}

/** The order a reservation is for (one per create-order task), and whom it is charged to. */
export interface ReservedOrder {
  readonly task_id: string;
  /** The caller key the order is charged to (`default` for the shared secret). */
  readonly key: string;
  /** The key's budget when the order was accepted (extensions are checked against it). */
  readonly key_budget_usd_per_day?: number;
  readonly server_id: number;
  readonly gpu: string;
  readonly gpus: number;
  readonly usd_per_hour: number;
}

/** An order's reservation, as stored (one per create-order task). */
export interface Reservation extends ReservedOrder {
  /** The fees reserved with (RENTER_FEE_PERCENT, ORDER_CREATION_FEE_USD when the order was placed). */
  readonly renter_fee_percent?: number;
  readonly creation_fee_usd?: number;
  /** USD per unit of the order's coin when it was placed (converts the marketplace's `spend`). */
  readonly usd_per_coin?: number;
  readonly segments: Readonly<Record<string, SpendSegment>>;
  readonly state: 'open' | 'settled';
  readonly order_id?: number;
  /** Readiness (the lease counts from here): time held starts. */
  readonly started_at?: number;
  readonly ended_at?: number;
  readonly hours_held?: number;
  readonly cost_usd?: number;
}

/** What the create-order step reserves. */
export interface NewReservation extends ReservedOrder {
  readonly hours: number;
  readonly fees?: MarketplaceFees;
  readonly usd_per_coin?: number;
}

/** The limits a reservation is checked against (undefined: none). */
export interface BudgetLimits {
  readonly relay?: number;
  readonly key?: number;
}

/** Why a reservation was refused: what was used today of which limit, and what the order needs. */
export interface BudgetRefusal {
  readonly scope: 'relay' | 'key';
  readonly key: string;
  readonly used: number;
  readonly limit: number;
  readonly needed: number;
  /** The key's own used total today and its budget (for a key told only its own figures). */
  readonly key_used?: number;
  readonly key_limit?: number;
}

export type ReserveOutcome =
  | {
      readonly ok: true;
      readonly usd: number;
      readonly day: string;
      readonly tracked: boolean;
      readonly used_today?: number;
    }
  | { readonly ok: false; readonly refusal: BudgetRefusal };

/** What a settlement charged. */
export interface Settlement {
  readonly task_id: string;
  readonly key: string;
  readonly order_id?: number;
  readonly cost_usd: number;
  readonly hours_held: number;
  /** Reserved and not spent: given back. */
  readonly released_usd: number;
}

/** How an order ended, as the settling caller saw it. */
export interface OrderEnd {
  /** When the relay saw it end (cancelled, or gone from my_orders). */
  readonly ended_at: number;
  /** Hours the marketplace billed, from its `spend` (production's my_orders), when it reported one. */
  readonly billed_hours?: number;
  /** What the marketplace charged, in the order's coin (production's `spend`, the renter fee included), when it reported it. */
  readonly spend?: number;
  /** The creation fee the marketplace reported (USD). */
  readonly creation_fee?: number;
}

/**
 * Where reservations, day totals and ledger items live. Every write is conditional, so concurrent
 * instances never reserve past a limit, and every call is idempotent (a retried step changes nothing).
 */
export interface SpendStore {
  /** Reserves the order's worst case today (a placement retry on another server replaces the task's earlier one). */
  reserve(reservation: NewReservation, limits: BudgetLimits, now: number): Promise<ReserveOutcome>;
  /**
   * Reserves an extension of `hours` of the order the task `taskId` placed, charged to today;
   * `tracked: false` when that order has no open reservation (placed before budgets, or ended).
   */
  extend(
    taskId: string,
    extension: { readonly id: string; readonly hours: number },
    relayLimit: number | undefined,
    now: number,
  ): Promise<ReserveOutcome>;
  /**
   * Reserves a price change of the order the task `taskId` placed (a set-spot-price, or an outbid
   * recovery's rebid) before the marketplace call: `raiseUsd` of the new USD per hour over the hours
   * left, charged to today against the relay limit and the key's budget (as it was when the order was
   * placed). Once per `change.id`; `tracked: false` when the order has no open reservation.
   */
  reprice(
    taskId: string,
    change: { readonly id: string; readonly usd_per_hour: number; readonly hours_left: number },
    relayLimit: number | undefined,
    now: number,
  ): Promise<ReserveOutcome>;
  /** Gives a price change back (the marketplace refused it): its reservation and its price segment. */
  unprice(taskId: string, changeId: string): Promise<void>;
  /** Records when the marketplace took a reserved price change: its price segment starts there (else at the reservation). */
  repriced(taskId: string, changeId: string, at: number): Promise<void>;
  /** Records the order and its readiness on the reservation (time held counts from here). */
  started(taskId: string, order: { readonly order_id: number; readonly started_at: number }): Promise<void>;
  /** Settles the task's reservation to the actual cost and releases the rest; undefined when it has none. */
  settle(taskId: string, end: OrderEnd, now: number): Promise<Settlement | undefined>;
  reservation(taskId: string): Promise<Reservation | undefined>;
}

/**
 * Hours an order was held: readiness to the end seen; the marketplace's billed hours only when the
 * relay never saw it ready (production's `spend` / current price is off after a raise and includes
 * the renter fee: issue 29 §3); never negative.
 */
export const hoursHeld = (reservation: Pick<Reservation, 'started_at'>, end: OrderEnd): number => {
  if (reservation.started_at === undefined)
    return end.billed_hours !== undefined && Number.isFinite(end.billed_hours) && end.billed_hours >= 0
      ? end.billed_hours
      : 0;
  return Math.max(0, end.ended_at - reservation.started_at) / 3600;
};

/**
 * The cost of a settled order, in USD (issue 29 §3): where the marketplace reported `spend`, that
 * spend at the USD rate kept with the reservation (never re-derived from the current price) plus the
 * creation fee; otherwise the price steps × hours, the renter fee on top, plus the creation fee.
 * Nothing for a task that placed no order.
 */
export const settledCostUsd = (
  reservation: Pick<
    Reservation,
    'order_id' | 'usd_per_hour' | 'segments' | 'started_at' | 'renter_fee_percent' | 'creation_fee_usd' | 'usd_per_coin'
  >,
  end: OrderEnd,
): number => {
  if (reservation.order_id === undefined) return 0;
  const fees = feesOf(reservation);
  const creation = end.creation_fee ?? fees.creation_fee_usd;
  if (end.spend !== undefined && Number.isFinite(end.spend) && end.spend >= 0 && reservation.usd_per_coin !== undefined)
    return roundUsd(end.spend * reservation.usd_per_coin + creation);
  const start = reservation.started_at;
  if (start === undefined) {
    const hours = hoursHeld(reservation, end);
    return roundUsd(allInUsdPerHour(reservation.usd_per_hour, fees) * hours + creation);
  }
  return roundUsd(steppedCostUsd(priceSteps(reservation), start, Math.max(start, end.ended_at), fees) + creation);
};

/**
 * How a settled cost is charged to an order's segments: in the order they were reserved, each up
 * to what it reserved; the last takes whatever is left (a cost above the worst case is charged, not dropped).
 */
export const settlementShares = (
  segments: readonly SpendSegment[],
  cost: number,
): { readonly segment: SpendSegment; readonly share: number }[] => {
  const ordered = [...segments].sort((a, b) => a.at - b.at || a.id.localeCompare(b.id));
  let left = roundUsd(cost);
  return ordered.map((segment, index) => {
    const share = index === ordered.length - 1 ? left : Math.min(left, segment.usd);
    left = roundUsd(left - share);
    return { segment, share: roundUsd(share) };
  });
};
