/** The body of POST /webhook/cancel-order (one module per route: a route builds only its own body's schemas at import). */
import type * as z from 'zod/mini';
import { bodyObject, CallbackUrlSchema, optional, OrderIdSchema } from '../request-fields';

/** POST /webhook/cancel-order. */
export const CancelOrderBodySchema = bodyObject({
  order_id: OrderIdSchema,
  callback_url: optional(CallbackUrlSchema),
});
export type CancelOrderBody = z.infer<typeof CancelOrderBodySchema>;
