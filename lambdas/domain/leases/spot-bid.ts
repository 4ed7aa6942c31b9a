/**
 * The spot bid (order-relay.md §3): the server's spot price in the order currency × 1.1, capped at
 * the request's `max_price` (issue 38 §8: `max_price` is what the caller pays at most), never below
 * the listed spot price.
 */
import type { Server } from '../marketplace-types';
import { usdPerHourPerUnit } from '../usd-per-hour';

/** Markup over the current spot price, so the bid wins against the asking price. */
export const SPOT_BID_MARKUP = 1.1;

/** Significant digits a bid keeps (see {@link spotBid}). */
const BID_DIGITS = 10;

/**
 * `spotPrice × 1.1`, rounded to 10 significant digits. Why: the multiplication leaves binary noise
 * (0.3 × 1.1 = 0.33000000000000007) and crypto prices can be tiny (1e-6 BTC), so fixed decimals
 * would destroy small values; 10 significant digits change the bid by less than 1e-9 of itself.
 */
export const spotBid = (spotPrice: number): number => {
  if (!Number.isFinite(spotPrice) || spotPrice <= 0)
    throw new RangeError(`spot price must be a positive number, got ${spotPrice}`);
  return Number((spotPrice * SPOT_BID_MARKUP).toPrecision(BID_DIGITS));
};

/** `value` rounded down to 10 significant digits: a cap converted to a coin must not round up past itself. */
const floorDigits = (value: number): number => {
  const rounded = Number(value.toPrecision(BID_DIGITS));
  if (rounded <= value) return rounded;
  const step = 10 ** (Math.floor(Math.log10(value)) - (BID_DIGITS - 1));
  return Number((rounded - step).toPrecision(BID_DIGITS));
};

/**
 * The bid for a spot price under a cap in the same unit: `min(spotPrice × 1.1, cap)`, never below
 * the spot price itself (the marketplace refuses a bid under it; the search kept that price under the cap).
 */
export const cappedSpotBid = (spotPrice: number, cap: number | undefined): number => {
  const bid = spotBid(spotPrice);
  if (cap === undefined || !Number.isFinite(cap) || cap <= 0 || bid <= cap) return bid;
  return Math.max(spotPrice, floorDigits(cap));
};

/**
 * The bid for a server in a currency, or undefined when it has no spot price there. With
 * `maxPriceUsdPerHour` (the request's `max_price`) the bid is capped at that price converted to the
 * order's coin per the marketplace's period, at the server's own rate (./usd-per-hour.ts); a server
 * that states no rate cannot be capped and keeps the plain bid.
 */
export const spotBidFor = (server: Server, currency: string, maxPriceUsdPerHour?: number): number | undefined => {
  const price = server.price.spot[currency];
  if (typeof price !== 'number' || !(price > 0)) return undefined;
  if (maxPriceUsdPerHour === undefined) return spotBid(price);
  const rate = usdPerHourPerUnit(server, currency);
  return cappedSpotBid(price, rate === undefined ? undefined : maxPriceUsdPerHour / rate);
};
