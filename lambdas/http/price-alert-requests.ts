/** The body of POST /webhook/price-alert, in a module of its own so that create-order does not build it. */
import type * as z from 'zod/mini';
import { bodyObject, CallbackUrlSchema, gpuType, optional, price } from './request-fields';
import { HostFilterFields, image, WaitSecondsSchema } from './order-requests';

const PRICE_ALERT_REQUIRED = 'gpu_type and target_price required';

/** POST /webhook/price-alert. */
export const PriceAlertBodySchema = bodyObject({
  gpu_type: gpuType(PRICE_ALERT_REQUIRED),
  target_price: price(
    'target_price',
    PRICE_ALERT_REQUIRED,
    'Alert when a server is available at or under this USD/hour spot price',
  ),
  image,
  callback_url: optional(CallbackUrlSchema),
  /** The queued create-order's wait (issue 23): it may stand when the matched server is gone by then. */
  wait_seconds: optional(WaitSecondsSchema),
  ...HostFilterFields,
});
export type PriceAlertBody = z.infer<typeof PriceAlertBodySchema>;
