/** The body of POST /webhook/status (one module per route, as cancel-order.ts). */
import type * as z from 'zod/mini';
import { bodyObject, CallbackUrlSchema, optional } from '../request-fields';

/** POST /webhook/status: the body is optional; an empty body counts as `{}`. */
export const StatusBodySchema = bodyObject({
  callback_url: optional(CallbackUrlSchema),
});
export type StatusBody = z.infer<typeof StatusBodySchema>;
