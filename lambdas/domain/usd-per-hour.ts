/**
 * A price in the marketplace's own unit (an amount of the order currency per the marketplace's
 * period, per day in production) as USD per hour, from one server's own rates. Pure: the rates are
 * the ones the reader put on the server (its crypto map and the same price in USD per hour), so the
 * marketplace's period never has to be known here.
 */
import type { Server } from './marketplace-types';

/** Significant digits of a converted price (as the reader's per-day → per-hour conversion). */
const DIGITS = 6;

const isPositive = (v: unknown): v is number => typeof v === 'number' && Number.isFinite(v) && v > 0;

/**
 * USD per hour of one marketplace unit of `currency` on this server: its on-demand price in USD per
 * hour over the same price in `currency` (the exact per-coin rate), else the spot prices' ratio;
 * undefined when the server states neither pair.
 */
export const usdPerHourPerUnit = (server: Pick<Server, 'price'>, currency: string): number | undefined => {
  const { on_demand: onDemand, spot, usd_per_hour: usd } = server.price;
  if (isPositive(usd.on_demand[currency]) && isPositive(onDemand[currency]))
    return usd.on_demand[currency] / onDemand[currency];
  if (isPositive(usd.spot) && isPositive(spot[currency])) return usd.spot / spot[currency];
  return undefined;
};

/** `amount` of `currency` in the marketplace's unit as USD per hour on this server, or null when its rates are not stated. */
export const marketplacePriceUsdPerHour = (
  server: Pick<Server, 'price'> | undefined,
  currency: string,
  amount: number,
): number | null => {
  const rate = server ? usdPerHourPerUnit(server, currency) : undefined;
  return rate === undefined ? null : Number((amount * rate).toPrecision(DIGITS));
};
