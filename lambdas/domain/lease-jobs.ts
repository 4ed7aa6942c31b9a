/**
 * The jobs on one leased order (issue 14): extend-order and set-spot-price, run by the job worker.
 * Moved out of fleet-watch.ts (the sweep) unchanged. Dependencies arrive in one object; time as `now`
 * (Unix seconds).
 */
import { ConcurrentUpdateError, MarketplaceRejectedError, isBusinessOutcome } from './errors';
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
import type { MarketplaceClient } from './ports';
import { budgetExceededText, type SpendStore } from './spend-budget';
import { failure, type FailureResult } from './task';
import { marketplacePriceUsdPerHour } from './usd-per-hour';

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

/** What an extension's reservation needs: the store, SPEND_LIMIT_USD_PER_DAY, and a report of what was reserved. */
export interface ExtensionSpend {
  readonly store: Pick<SpendStore, 'extend'>;
  readonly limitUsdPerDay?: number;
  readonly onReserved?: (usd: number, usedToday: number | undefined) => void;
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
  ctx: { readonly task_id: string; readonly now: number },
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
    if (reserved && !reserved.ok) return failure(budgetExceededText(reserved.refusal));
    if (reserved?.tracked) deps.spend.onReserved?.(reserved.usd, reserved.used_today);
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

export interface SetSpotPriceDeps {
  readonly leases: Pick<LeaseStore, 'claimSpotDecrease' | 'releaseSpotDecrease'>;
  readonly marketplace: Pick<MarketplaceClient, 'listOrders' | 'setSpotPrice' | 'listServers'>;
}

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
  ctx: { readonly now: number },
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
  if (decrease) {
    const claim = await deps.leases.claimSpotDecrease(input.order_id, ctx.now, SPOT_DECREASE_INTERVAL_SECONDS);
    if (!claim.claimed) {
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
  return {
    success: true,
    order_id: input.order_id,
    desired_price: input.desired_price,
    currency: order.currency,
    desired_price_usd_per_hour: desired.usdPerHour,
  };
};
