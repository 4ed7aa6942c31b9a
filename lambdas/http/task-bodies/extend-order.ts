/** The body of POST /webhook/extend-order (one module per route, as cancel-order.ts); the rules are in lease.ts. */
import type * as z from 'zod/mini';
import {
  EXTEND_REQUIRED_ERROR,
  HOURS_ERROR,
  isLeaseHours,
  leaseHoursProblem,
  MAX_LEASE_HOURS,
} from '../../domain/leases/lease';
import { boundText, MIN_HOURS } from '../../domain/requests/number-bounds';
import { bodyObject, CallbackUrlSchema, optional } from '../request-fields';
import { requiredNumber, requiredOrderId } from './required-fields';

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
