/**
 * The jobs on one leased order (issue 14): extend-order and set-spot-price, run by the job worker.
 * Moved out of fleet-watch.ts (the sweep) unchanged. Dependencies arrive in one object; time as `now`
 * (Unix seconds).
 */
import { ConcurrentUpdateError, MarketplaceRejectedError, isBusinessOutcome } from '../errors';
import {
  SPOT_DECREASE_INTERVAL_SECONDS,
  activeOrdersById,
  extendLease,
  hasLease,
  spendTaskOf,
  isSpotDecrease,
  notSpotOrderText,
  orderNotActiveText,
  spotDecreaseRefusal,
  spotPriceRefusedText,
  spotRaiseRefusal,
  type ExtendOrderInput,
  type ExtendOrderSuccess,
  type SetSpotPriceInput,
  type SetSpotPriceSuccess,
} from './lease';
import type { LeaseStore } from './lease-ports';
import type { MarketplaceClient } from '../ports';
import { budgetExceededText, type SpendStore } from '../teams/spend-budget';
import { failure, type FailureResult } from '../task';
import { marketplacePriceUsdPerHour } from '../usd-per-hour';

const reasonOf = (error: unknown): string => (error instanceof Error ? error.message : String(error));

// ---- extend-order -----------------------------------------------------------------------------

/**
 * The jobs on one order read my_orders fresh (completed orders included, which bypasses the shared
 * read cache): a cached list may be a poll interval old, and a decision on one order (is it still
 * active? is this a decrease of its current price?) must see its current status and price.
 */
const FRESH_READ = { returnCompleted: true } as const;

export interface ExtendOrderDeps {
  readonly leases: Pick<LeaseStore, 'get' | 'extend'>;
  readonly marketplace: Pick<MarketplaceClient, 'listOrders'>;
  /** Spending (issue 24): an extension reserves its hours first (./spend-budget.ts). Absent: not reserved. */
  readonly spend?: ExtensionSpend;
}

/**
 * What an extension's or a price change's reservation needs: the store, SPEND_LIMIT_USD_PER_DAY, and a
 * report of what was reserved (the SpendReservedUsd / SpendUsedTodayUsd metrics, as a create's).
 */
export interface ExtensionSpend {
  readonly store: Pick<SpendStore, 'extend' | 'reprice' | 'unprice' | 'repriced'>;
  /** The clock with its fraction (Unix seconds): when the marketplace took a price change. @default the job's time */
  readonly clock?: () => number;
  readonly limitUsdPerDay?: number;
  /** `key`: the caller key the order is charged to (`default` for the shared secret). */
  readonly onReserved?: (usd: number, usedToday: number | undefined, key: string) => void;
}

/** Conditional-write attempts before an extension gives up to the job's retry (ConcurrentUpdateError is transient). */
const EXTEND_ATTEMPTS = 3;

/**
 * Extends an active order's lease to `max(now, current end) + hours`; an order without a lease gets
 * one (and is watched from now on, reporting to this task's callback_url unless the relay placed it).
 * Fails with `order <id> is not active` when my_orders does not list it as active or its lease ended.
 */
export const extendOrder = async (
  input: ExtendOrderInput,
  ctx: { readonly task_id: string; readonly now: number; readonly relayWide?: boolean },
  deps: ExtendOrderDeps,
): Promise<ExtendOrderSuccess | FailureResult> => {
  const order = activeOrdersById(await deps.marketplace.listOrders(FRESH_READ)).get(input.order_id);
  if (!order) return failure(orderNotActiveText(input.order_id));
  if (deps.spend) {
    // The extension's hours at the order's reserved price, charged to today, before the lease moves (issue 24).
    const tracked = await deps.leases.get(input.order_id);
    const placedBy = tracked ? spendTaskOf(tracked) : undefined;
    const reserved =
      placedBy === undefined
        ? undefined
        : await deps.spend.store.extend(
            placedBy,
            { id: ctx.task_id, hours: input.hours },
            deps.spend.limitUsdPerDay,
            ctx.now,
          );
    if (reserved && !reserved.ok)
      return failure(budgetExceededText(reserved.refusal, { relayWide: ctx.relayWide !== false }));
    if (reserved?.tracked) deps.spend.onReserved?.(reserved.usd, reserved.used_today, tracked?.key ?? 'default');
  }
  for (let attempt = 0; attempt < EXTEND_ATTEMPTS; attempt += 1) {
    const record = await deps.leases.get(input.order_id);
    // An ended lease or one being cancelled: the order is on its way out.
    if (hasLease(record) && (record.ended || record.cancel_claimed_at !== undefined))
      return failure(orderNotActiveText(input.order_id));
    const expectedEnd = hasLease(record) ? record.expires_at : undefined;
    const expiresAt = extendLease(expectedEnd, ctx.now, input.hours);
    const watched = record ?? {
      order_id: input.order_id,
      task_id: ctx.task_id,
      ...(input.callback_url !== undefined ? { callback_url: input.callback_url } : {}),
      spot: order.type === 'spot',
    };
    if (
      await deps.leases.extend(
        watched,
        { expectedEnd, expiresAt, addHours: input.hours },
        { now: ctx.now, status: order.status },
      )
    ) {
      return { success: true, order_id: input.order_id, lease_expires_at: expiresAt };
    }
  }
  throw new ConcurrentUpdateError(`lease of order ${input.order_id} kept changing during the extension`);
};

// ---- set-spot-price ---------------------------------------------------------------------------

/**
 * Reserves a set-spot-price on an order the relay placed (its reservation's task): the price segment
 * from now on, and for a raise its extra cost over the hours left. A raise whose USD price cannot be
 * told is refused; an order without a reservation (placed before budgets, or not by the relay) has nothing to reserve.
 */
const reservePriceChange = async (
  input: SetSpotPriceInput,
  currentPrice: number,
  desiredUsdPerHour: number | null,
  ctx: { readonly now: number; readonly task_id?: string; readonly relayWide?: boolean; readonly at?: number },
  deps: SetSpotPriceDeps,
): Promise<{ readonly refused?: FailureResult; readonly changeId?: string; readonly placedBy?: string }> => {
  if (!deps.spend || !deps.leases.get || ctx.task_id === undefined) return {};
  const record = await deps.leases.get(input.order_id);
  if (!record) return {};
  const placedBy = spendTaskOf(record);
  if (desiredUsdPerHour === null) {
    // No USD figure to reserve: a raise is refused where a budget may apply (the relay's limit, or an
    // order of a caller key, whose budget travels with its reservation); otherwise it is not reserved.
    const budgetMayApply = deps.spend.limitUsdPerDay !== undefined || (record.key ?? 'default') !== 'default';
    return input.desired_price > currentPrice && budgetMayApply
      ? { refused: failure(raiseNotReservableText(input.order_id)) }
      : {};
  }
  const reserved = await deps.spend.store.reprice(
    placedBy,
    { id: ctx.task_id, usd_per_hour: desiredUsdPerHour, hours_left: hoursLeft(record, ctx.now) },
    deps.spend.limitUsdPerDay,
    ctx.at ?? ctx.now,
  );
  if (!reserved.ok)
    return { refused: failure(budgetExceededText(reserved.refusal, { relayWide: ctx.relayWide !== false })) };
  if (!reserved.tracked) return {};
  if (reserved.usd > 0) deps.spend.onReserved?.(reserved.usd, reserved.used_today, record.key ?? 'default');
  return { changeId: ctx.task_id, placedBy };
};

export interface SetSpotPriceDeps {
  readonly leases: Pick<LeaseStore, 'claimSpotDecrease' | 'releaseSpotDecrease'> & Partial<Pick<LeaseStore, 'get'>>;
  readonly marketplace: Pick<MarketplaceClient, 'listOrders' | 'setSpotPrice' | 'listServers'>;
  /** Spending (issue 29 §3): a raise reserves its extra cost first. Absent: not reserved. */
  readonly spend?: ExtensionSpend;
}

/** The refusal of a raise whose USD price cannot be told: nothing is spent that was not reserved first. */
export const raiseNotReservableText = (orderId: number): string =>
  `order ${orderId}: the raise cannot be reserved (the listing states no USD rate for the order's server); nothing was changed`;

/** Lease hours left of an order at `now` (0 without a lease: its reservation covers no hours either). */
const hoursLeft = (record: Awaited<ReturnType<LeaseStore['get']>>, now: number): number =>
  hasLease(record) && !record.ended ? Math.max(0, record.expires_at - now) / 3600 : 0;

/** The order's server as listed (for its USD rates), or undefined when the listing cannot be read. */
const serverOf = async (marketplace: Pick<MarketplaceClient, 'listServers'>, serverId: number) => {
  try {
    return (await marketplace.listServers()).find((s) => s.id === serverId);
  } catch {
    // Only the USD figure of a text or result depends on it: never a reason to fail or retry.
    return undefined;
  }
};

/**
 * Sets an active spot order's price (`desired_price` in the marketplace's unit: the order currency
 * per day). A decrease within 600 s of the relay's previous decrease on the order, and a raise to
 * more than 10 × the current price, are refused here, without a marketplace call. A marketplace
 * refusal (code 6) and other business errors become a failure naming the reason; transient errors
 * are thrown for the job's retry. The success shows the price in USD per hour too.
 */
export const setSpotPrice = async (
  input: SetSpotPriceInput,
  ctx: {
    readonly now: number;
    readonly task_id?: string;
    readonly relayWide?: boolean;
    /** The instant with its fraction (Unix seconds): where the new price segment starts. @default now */
    readonly at?: number;
  },
  deps: SetSpotPriceDeps,
): Promise<SetSpotPriceSuccess | FailureResult> => {
  const order = activeOrdersById(await deps.marketplace.listOrders(FRESH_READ)).get(input.order_id);
  if (!order) return failure(orderNotActiveText(input.order_id));
  if (order.type !== 'spot') return failure(notSpotOrderText(input.order_id));
  const server = await serverOf(deps.marketplace, order.renting_server);
  const usdPerHour = (price: number) => marketplacePriceUsdPerHour(server, order.currency, price);
  const desired = { price: input.desired_price, usdPerHour: usdPerHour(input.desired_price) };
  const raiseRefused = spotRaiseRefusal(
    input.order_id,
    { price: order.price, usdPerHour: usdPerHour(order.price) },
    desired,
    order.currency,
  );
  if (raiseRefused) return failure(raiseRefused);
  const decrease = isSpotDecrease(order.price, input.desired_price);
  // Issue 29 §3: the change is reserved before the marketplace call, charged to the order's key
  // against its budget and the relay's limit: (new USD/h − reserved USD/h) × lease hours left.
  const priced = await reservePriceChange(input, order.price, desired.usdPerHour, ctx, deps);
  if (priced.refused) return priced.refused;
  const changeId = priced.changeId;
  const giveBack = async () => {
    if (changeId && deps.spend && priced.placedBy)
      await deps.spend.store.unprice(priced.placedBy, changeId).catch(() => undefined);
  };
  if (decrease) {
    const claim = await deps.leases.claimSpotDecrease(input.order_id, ctx.now, SPOT_DECREASE_INTERVAL_SECONDS);
    if (!claim.claimed) {
      await giveBack();
      return failure(
        spotDecreaseRefusal(input.order_id, claim.last_at, ctx.now) ??
          `spot price of order ${input.order_id} was lowered recently`,
      );
    }
  }
  try {
    await deps.marketplace.setSpotPrice(input.order_id, input.desired_price);
  } catch (error) {
    // A refused (or failed) decrease did not count against the marketplace's 600 s.
    if (decrease) await deps.leases.releaseSpotDecrease(input.order_id, ctx.now);
    // A refusal changed nothing: its reservation (and price segment) is given back. A transient error keeps it for the retry.
    if (error instanceof MarketplaceRejectedError || isBusinessOutcome(error)) await giveBack();
    if (error instanceof MarketplaceRejectedError) {
      // too_low_price: production sends the minimum (the server's spot price); the spec's dialect does
      // not, and words a too-big step the same way, so the listed spot price is named only when the
      // bid is under it.
      const listed = server?.price.spot[order.currency];
      const least =
        error.reason !== 'too_low_price'
          ? undefined
          : (error.details.min_price ??
            (typeof listed === 'number' && listed > input.desired_price ? listed : undefined));
      return failure(
        spotPriceRefusedText(
          input.order_id,
          input.desired_price,
          error.reason,
          error.details,
          least === undefined ? undefined : { price: least, currency: order.currency, usdPerHour: usdPerHour(least) },
        ),
      );
    }
    if (isBusinessOutcome(error)) return failure(reasonOf(error));
    throw error;
  }
  // The new price segment starts when the marketplace took it (the reservation was made before the paced call).
  if (changeId && deps.spend && priced.placedBy)
    await deps.spend.store
      .repriced(priced.placedBy, changeId, deps.spend.clock?.() ?? ctx.at ?? ctx.now)
      .catch(() => undefined);
  return {
    success: true,
    order_id: input.order_id,
    desired_price: input.desired_price,
    currency: order.currency,
    desired_price_usd_per_hour: desired.usdPerHour,
  };
};
