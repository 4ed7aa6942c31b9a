/**
 * Request bodies of the routes that act on an order or a task: cancel-order, status, cancel-task,
 * extend-order and set-spot-price. The rules they apply are in lambdas/domain (request-rules.ts,
 * lease.ts, standing-orders.ts).
 */
import * as z from 'zod/mini';
import {
  DESIRED_PRICE_ERROR,
  DESIRED_PRICE_RANGE_ERROR,
  EXTEND_REQUIRED_ERROR,
  HOURS_ERROR,
  isLeaseHours,
  leaseHoursProblem,
  MAX_DESIRED_PRICE,
  MAX_LEASE_HOURS,
  MAX_SPOT_RAISE_FACTOR,
  MIN_DESIRED_PRICE,
  SPOT_PRICE_REQUIRED_ERROR,
} from '../domain/leases/lease';
import { boundText, MIN_HOURS } from '../domain/requests/number-bounds';
import { CANCEL_TASK_REQUIRED } from '../domain/recovery/standing-orders';
import { isTaskId } from '../domain/requests/task-view';
import { bodyObject, CallbackUrlSchema, describe, optional, OrderIdSchema, refuse } from './request-fields';

/** POST /webhook/cancel-order. */
export const CancelOrderBodySchema = bodyObject({
  order_id: OrderIdSchema,
  callback_url: optional(CallbackUrlSchema),
});
export type CancelOrderBody = z.infer<typeof CancelOrderBodySchema>;

/** POST /webhook/status: the body is optional; an empty body counts as `{}`. */
export const StatusBodySchema = bodyObject({
  callback_url: optional(CallbackUrlSchema),
});
export type StatusBody = z.infer<typeof StatusBodySchema>;

/** POST /webhook/cancel-task. */
export const CancelTaskBodySchema = bodyObject({
  task_id: z.pipe(
    z.unknown(),
    z.transform((value, ctx): string => {
      if (value === undefined || value === null || value === '') return refuse(ctx, CANCEL_TASK_REQUIRED);
      return typeof value === 'string' && isTaskId(value) ? value.toLowerCase() : refuse(ctx, 'Invalid task_id');
    }),
  ),
  callback_url: optional(CallbackUrlSchema),
});

/** order_id with a route's own "required" text; the other order_id texts are OrderIdSchema's. */
/* @__NO_SIDE_EFFECTS__ */
const requiredOrderId = (requiredMessage: string) =>
  describe(
    z.pipe(
      z.unknown(),
      z.transform((value, ctx): number => {
        // The spec's rule for order_id: missing or falsy counts as not sent.
        if (!value) return refuse(ctx, requiredMessage);
        const parsed = OrderIdSchema.safeParse(value);
        if (parsed.success) return parsed.data;
        return refuse(ctx, parsed.error.issues[0]?.message ?? 'order_id must be an integer');
      }),
    ),
    {
      description: 'Marketplace order id: an integer or a string of digits',
      anyOf: [
        { type: 'integer', minimum: 1 },
        { type: 'string', pattern: '^\\d+$' },
      ],
    },
  );

/** A required field: absent or null → `requiredMessage`; present but failing `valid` → `invalidMessage`. */
/* @__NO_SIDE_EFFECTS__ */
const requiredNumber = (
  requiredMessage: string,
  invalidMessage: (value: unknown) => string,
  valid: (n: unknown) => n is number,
  meta: Record<string, unknown>,
) =>
  describe(
    z.pipe(
      z.unknown(),
      z.transform((value, ctx): number => {
        if (value === undefined || value === null) return refuse(ctx, requiredMessage);
        return valid(value) ? value : refuse(ctx, invalidMessage(value));
      }),
    ),
    meta,
  );

const isPositivePrice = (value: unknown): value is number =>
  typeof value === 'number' && Number.isFinite(value) && value > 0;

/** `desired_price`: required, a positive number, within [MIN_DESIRED_PRICE, MAX_DESIRED_PRICE]. */
const DesiredPriceSchema = describe(
  z.pipe(
    z.unknown(),
    z.transform((value, ctx): number => {
      if (value === undefined || value === null) return refuse(ctx, SPOT_PRICE_REQUIRED_ERROR);
      if (!isPositivePrice(value)) return refuse(ctx, DESIRED_PRICE_ERROR);
      return value >= MIN_DESIRED_PRICE && value <= MAX_DESIRED_PRICE ? value : refuse(ctx, DESIRED_PRICE_RANGE_ERROR);
    }),
  ),
  {
    description:
      "New spot price in the marketplace's own unit: an amount of the order's currency per day (not USD per hour), e.g. 1540 for 1540 CLORE a day. " +
      `Between ${MIN_DESIRED_PRICE.toFixed(8)} and ${MAX_DESIRED_PRICE}; the relay refuses a raise to more than ${MAX_SPOT_RAISE_FACTOR} × the order's current price. The result shows it in USD per hour too.`,
    type: 'number',
    minimum: MIN_DESIRED_PRICE,
    maximum: MAX_DESIRED_PRICE,
  },
);

/** POST /webhook/extend-order. */
export const ExtendOrderBodySchema = bodyObject({
  order_id: requiredOrderId(EXTEND_REQUIRED_ERROR),
  hours: requiredNumber(
    EXTEND_REQUIRED_ERROR,
    (value) => leaseHoursProblem(value, 'hours', HOURS_ERROR),
    isLeaseHours,
    {
      description: `Hours added to the lease (at least ${boundText(MIN_HOURS)}, at most ${MAX_LEASE_HOURS}); the new end is max(now, current end) + hours`,
      type: 'number',
      minimum: MIN_HOURS,
      maximum: MAX_LEASE_HOURS,
    },
  ),
  callback_url: optional(CallbackUrlSchema),
});
export type ExtendOrderBody = z.infer<typeof ExtendOrderBodySchema>;

/** POST /webhook/set-spot-price. */
export const SetSpotPriceBodySchema = bodyObject({
  order_id: requiredOrderId(SPOT_PRICE_REQUIRED_ERROR),
  desired_price: DesiredPriceSchema,
  callback_url: optional(CallbackUrlSchema),
});
export type SetSpotPriceBody = z.infer<typeof SetSpotPriceBodySchema>;
