/** The required fields extend-order and set-spot-price share, as schema builders (nothing is built at import). */
import * as z from 'zod/mini';
import { describe, OrderIdSchema, refuse } from '../request-fields';

/** order_id with a route's own "required" text; the other order_id texts are OrderIdSchema's. */
/* @__NO_SIDE_EFFECTS__ */
export const requiredOrderId = (requiredMessage: string) =>
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
export const requiredNumber = (
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
