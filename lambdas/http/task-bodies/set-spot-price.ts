/** The body of POST /webhook/set-spot-price (one module per route, as cancel-order.ts); the rules are in lease.ts. */
import * as z from 'zod/mini';
import {
  DESIRED_PRICE_ERROR,
  DESIRED_PRICE_RANGE_ERROR,
  MAX_DESIRED_PRICE,
  MAX_SPOT_RAISE_FACTOR,
  MIN_DESIRED_PRICE,
  SPOT_PRICE_REQUIRED_ERROR,
} from '../../domain/leases/lease';
import { bodyObject, CallbackUrlSchema, describe, optional, refuse } from '../request-fields';
import { requiredOrderId } from './required-fields';

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

/** POST /webhook/set-spot-price. */
export const SetSpotPriceBodySchema = bodyObject({
  order_id: requiredOrderId(SPOT_PRICE_REQUIRED_ERROR),
  desired_price: DesiredPriceSchema,
  callback_url: optional(CallbackUrlSchema),
});
export type SetSpotPriceBody = z.infer<typeof SetSpotPriceBodySchema>;
