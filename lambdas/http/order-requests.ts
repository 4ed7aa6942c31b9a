/**
 * The fields both order-placing routes take (standing-order wait, host filters); create-order's own
 * body is in create-order-requests.ts, price-alert's in price-alert-requests.ts. The rules they apply
 * are in lambdas/domain (request-rules.ts, hosts/matching.ts).
 */
import * as z from 'zod/mini';
import { MAX_WAIT_SECONDS, WAIT_SECONDS_ERROR } from '../domain/requests/request-rules';
import { boundText, MIN_FILTER } from '../domain/requests/number-bounds';
import { describe, MAX_IMAGE_LENGTH, optional, refuse } from './request-fields';

// ---- the image (create-order and price-alert; here, not in request-fields.ts, so the other routes do not build it) ----

/** `image`: an optional container image reference. */
export const image = describe(
  optional(
    z
      .string({ error: 'image must be a string' })
      .check(
        z.trim(),
        z.minLength(1, 'image must not be empty'),
        z.maxLength(MAX_IMAGE_LENGTH, `image must be at most ${MAX_IMAGE_LENGTH} characters`),
      ),
  ),
  { description: 'Container image reference; defaults to the configured image' },
);

// ---- standing orders (issue 23; the rules are in standing-orders.ts) ----------------------------

/** `wait_seconds` of create-order: absent/null → undefined; an integer in [0, 86400] → itself; else the 400 text. */
export const WaitSecondsSchema = describe(
  z.pipe(
    z.unknown(),
    z.transform((value, ctx): number | undefined => {
      if (value === undefined || value === null) return undefined;
      if (typeof value === 'number' && Number.isInteger(value) && value >= 0 && value <= MAX_WAIT_SECONDS) return value;
      return refuse(ctx, WAIT_SECONDS_ERROR);
    }),
  ),
  {
    description:
      `Standing order: seconds to wait for a matching server when none is free now (0 = fail at once, the default; at most ${MAX_WAIT_SECONDS}). ` +
      'The task shows `waiting` meanwhile and is served first come, first served per GPU type; past the wait it fails with the no-match text.',
    type: 'integer',
    minimum: 0,
    maximum: MAX_WAIT_SECONDS,
  },
);

// ---- host filters and choice (issue 31; the rules are in domain/hosts/matching.ts) -----------------------

/** The most server ids `exclude_servers` may list. */
export const MAX_EXCLUDE_SERVERS = 100;

/**
 * A number in [min, max]: absent/null → undefined; else the 400 text naming the field and its range.
 * With min 0, a value above 0 is at least MIN_FILTER (issue 38 §6: 1e-200 is no filter DynamoDB can keep).
 */
/* @__NO_SIDE_EFFECTS__ */
const boundedNumber = (field: string, min: number, max: number, description: string, integer = false) =>
  z.optional(
    describe(
      z.pipe(
        z.unknown(),
        z.transform((value, ctx): number | undefined => {
          if (value === undefined || value === null) return undefined;
          if (
            typeof value === 'number' &&
            Number.isFinite(value) &&
            value >= min &&
            value <= max &&
            (!integer || Number.isInteger(value)) &&
            (min !== 0 || value === 0 || value >= MIN_FILTER)
          )
            return value === 0 ? 0 : value;
          if (min === 0 && typeof value === 'number' && value > 0 && value < MIN_FILTER)
            return refuse(ctx, `${field} must be 0 or a number between ${boundText(MIN_FILTER)} and ${max}`);
          return refuse(ctx, `${field} must be ${integer ? 'a whole number' : 'a number'} between ${min} and ${max}`);
        }),
      ),
      { description, type: integer ? 'integer' : 'number', minimum: min, maximum: max },
    ),
  );

export const EXCLUDE_SERVERS_ERROR = `exclude_servers must be a list of at most ${MAX_EXCLUDE_SERVERS} server ids (positive integers)`;

/** The host filters of create-order and price-alert (issue 31 §1). */
export const HostFilterFields = {
  min_reliability: boundedNumber(
    'min_reliability',
    0,
    1,
    'Leave out servers whose marketplace `reliability` (0–1) is below this; default DEFAULT_MIN_RELIABILITY (unset: no filter)',
  ),
  min_rating: boundedNumber(
    'min_rating',
    0,
    5,
    'Leave out servers whose average `rating` (0–5) is below this; default DEFAULT_MIN_RATING (unset: no filter)',
  ),
  min_rating_count: boundedNumber(
    'min_rating_count',
    1,
    1_000_000,
    'With min_rating: the fewest ratings a server must have; default DEFAULT_MIN_RATING_COUNT, else 1 when min_rating is set',
    true,
  ),
  exclude_servers: z.optional(
    describe(
      z.pipe(
        z.unknown(),
        z.transform((value, ctx): number[] | undefined => {
          if (value === undefined || value === null) return undefined;
          if (
            Array.isArray(value) &&
            value.length <= MAX_EXCLUDE_SERVERS &&
            value.every((id) => typeof id === 'number' && Number.isSafeInteger(id) && id > 0)
          )
            return [...new Set(value as number[])];
          return refuse(ctx, EXCLUDE_SERVERS_ERROR);
        }),
      ),
      {
        description: `Server ids never to rent (at most ${MAX_EXCLUDE_SERVERS})`,
        type: 'array',
        items: { type: 'integer', minimum: 1 },
        maxItems: MAX_EXCLUDE_SERVERS,
      },
    ),
  ),
};
