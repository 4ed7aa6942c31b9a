/**
 * The bounds of every number a request carries (issue 38 §6). DynamoDB stores numbers of magnitude
 * 1e-130 to 1e126 only, and JSON carries any double: a number outside its range accepted at the door
 * failed later at a table write with a 5xx (a `max_price` of 1e200 filled the waiting queue's slots).
 * Each bound is chosen so that every value inside is storable and none outside makes sense: a price
 * of a millionth of a dollar per hour or of 10,000 dollars per hour (an 8-GPU H100 server is about
 * $20/h) is no price anyone means. Pure.
 */

/** Prices in USD per hour (`max_price`, `target_price`, Slack `rent`'s price): at least $0.000001/h. */
export const MIN_USD_PER_HOUR = 0.000001;
/** Prices in USD per hour: at most $10,000/h. */
export const MAX_USD_PER_HOUR = 10_000;
/** A caller key's `budget_usd_per_day`: at least one cent a day. */
export const MIN_BUDGET_USD_PER_DAY = 0.01;
/** A caller key's `budget_usd_per_day`: at most $1,000,000 a day. */
export const MAX_BUDGET_USD_PER_DAY = 1_000_000;
/** A caller key's `orders_per_hour`: at most 100,000 (about 28 a second is no cap at all). */
export const MAX_ORDERS_PER_HOUR = 100_000;
/** Lease hours (`max_hours`, extend-order's `hours`, Slack `extend`, an operator's avoidance): at least 0.001 h (3.6 s). */
export const MIN_HOURS = 0.001;
/** A host filter that is not 0 (`min_reliability`, `min_rating`): at least this much (0 means no filter). */
export const MIN_FILTER = 0.000001;

/** A bound as the 400 texts write it: 0.000001, 10000, 1000000 (never 1e-6). */
export const boundText = (n: number): string =>
  n < 1 ? n.toFixed(Math.max(0, -Math.floor(Math.log10(n)))) : String(n);

/** The 400 text of a USD per hour price outside [MIN_USD_PER_HOUR, MAX_USD_PER_HOUR]. */
export const usdPerHourRangeText = (field: string): string =>
  `${field} must be between ${boundText(MIN_USD_PER_HOUR)} and ${MAX_USD_PER_HOUR} (USD per hour)`;

/** Whether a positive price is within the bounds. */
export const isUsdPerHourInRange = (n: number): boolean => n >= MIN_USD_PER_HOUR && n <= MAX_USD_PER_HOUR;

/** The 400 text of hours below MIN_HOURS. */
export const minHoursText = (field: string): string => `${field} must be at least ${boundText(MIN_HOURS)}`;
