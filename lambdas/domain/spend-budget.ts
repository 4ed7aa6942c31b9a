/**
 * Spending budgets (issue 24 item 2): the relay's SPEND_LIMIT_USD_PER_DAY and a caller key's
 * `budget_usd_per_day`. Before create_order the relay reserves the order's worst case (its USD per
 * hour × its lease hours) against the UTC day; when the order ends the reservation is settled to the
 * actual cost (USD per hour × hours held) and the rest released. Pure rules and the store's port;
 * the DynamoDB adapter is lambdas/adapters/dynamodb-spend-store.ts. Money is USD; times Unix seconds.
 */
import type { TaskCaller } from './caller-keys';
import type { Server } from './marketplace-types';
import { spotBidFor } from './spot-bid';
import { marketplacePriceUsdPerHour } from './usd-per-hour';

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

/** The failure text of a refused reservation; a key's own budget names the key. */
export const budgetExceededText = (refusal: BudgetRefusal): string =>
  `budget exceeded: ${usdText(refusal.used)} of ${usdText(refusal.limit)} today${refusal.scope === 'key' ? ` (key ${refusal.key})` : ''}; ` +
  `this order needs up to ${usdText(refusal.needed)}`;

/**
 * The most an order on `server` can cost per hour, in USD: the on-demand price in the order currency,
 * or for a spot order its bid (1.1 × the spot price) in USD. Undefined when the server states neither.
 */
export const orderUsdPerHour = (
  server: Server,
  request: { readonly use_spot: boolean; readonly currency: string },
): number | undefined => {
  if (!request.use_spot) {
    const price = server.price.usd_per_hour.on_demand[request.currency];
    return typeof price === 'number' && price > 0 ? price : undefined;
  }
  const bid = spotBidFor(server, request.currency);
  const bidUsd = bid === undefined ? null : marketplacePriceUsdPerHour(server, request.currency, bid);
  if (bidUsd !== null && bidUsd > 0) return bidUsd;
  const spot = server.price.usd_per_hour.spot;
  return typeof spot === 'number' && spot > 0 ? roundUsd(spot * 1.1) : undefined;
};

/** The worst case of `hours` at `usdPerHour`. */
export const worstCaseUsd = (usdPerHour: number, hours: number): number => roundUsd(usdPerHour * hours);

/** One reserved part of an order: the create-order's lease, or one extension (charged to the day it was made). */
export interface SpendSegment {
  /** `s<server>` for the order's reservation, `x<task>` for an extension. */
  readonly id: string;
  readonly day: string;
  readonly usd: number;
  readonly hours: number;
  /** When it was reserved (settlement charges the cost to segments in this order). */
  readonly at: number;
}

/** An order's reservation, as stored (one per create-order task). */
export interface Reservation {
  readonly task_id: string;
  /** The caller key the order is charged to (`default` for the shared secret). */
  readonly key: string;
  /** The key's budget when the order was accepted (extensions are checked against it). */
  readonly key_budget_usd_per_day?: number;
  readonly server_id: number;
  readonly gpu: string;
  readonly gpus: number;
  readonly usd_per_hour: number;
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
export interface NewReservation {
  readonly task_id: string;
  readonly key: string;
  readonly key_budget_usd_per_day?: number;
  readonly server_id: number;
  readonly gpu: string;
  readonly gpus: number;
  readonly usd_per_hour: number;
  readonly hours: number;
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
  /** Records the order and its readiness on the reservation (time held counts from here). */
  started(taskId: string, order: { readonly order_id: number; readonly started_at: number }): Promise<void>;
  /** Settles the task's reservation to the actual cost and releases the rest; undefined when it has none. */
  settle(taskId: string, end: OrderEnd, now: number): Promise<Settlement | undefined>;
  reservation(taskId: string): Promise<Reservation | undefined>;
}

/** Hours an order was held: the marketplace's billed hours when reported, else readiness to the end seen; never negative. */
export const hoursHeld = (reservation: Pick<Reservation, 'started_at'>, end: OrderEnd): number => {
  if (reservation.started_at === undefined) return end.billed_hours ?? 0;
  if (end.billed_hours !== undefined && Number.isFinite(end.billed_hours) && end.billed_hours >= 0)
    return end.billed_hours;
  return Math.max(0, end.ended_at - reservation.started_at) / 3600;
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
