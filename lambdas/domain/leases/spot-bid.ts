/** The spot bid (order-relay.md §3): the server's spot price in the order currency × 1.1. */
import type { Server } from '../marketplace-types';

/** Markup over the current spot price, so the bid wins against the asking price. */
export const SPOT_BID_MARKUP = 1.1;

/**
 * `spotPrice × 1.1`, rounded to 10 significant digits. Why: the multiplication leaves binary noise
 * (0.3 × 1.1 = 0.33000000000000007) and crypto prices can be tiny (1e-6 BTC), so fixed decimals
 * would destroy small values; 10 significant digits change the bid by less than 1e-9 of itself.
 */
export const spotBid = (spotPrice: number): number => {
  if (!Number.isFinite(spotPrice) || spotPrice <= 0)
    throw new RangeError(`spot price must be a positive number, got ${spotPrice}`);
  return Number((spotPrice * SPOT_BID_MARKUP).toPrecision(10));
};

/** The bid for a server in a currency, or undefined when it has no spot price there. */
export const spotBidFor = (server: Server, currency: string): number | undefined => {
  const price = server.price.spot[currency];
  return typeof price === 'number' && price > 0 ? spotBid(price) : undefined;
};
