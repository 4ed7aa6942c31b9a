/**
 * The body of POST /webhook/create-order, with its lease (issue 14), standing order (issue 23),
 * outbid recovery and host choice (issue 31) fields. The rules they apply are in lambdas/domain
 * (lease.ts, standing-orders.ts, on-outbid.ts, hosts/matching.ts).
 */
import * as z from 'zod/mini';
import { ON_OUTBID_ERROR, ON_OUTBID_MODES, onOutbidProblem, type OnOutbid } from '../domain/recovery/on-outbid';
import { MAX_LEASE_HOURS, parseMaxHours } from '../domain/leases/lease';
import { ENV_AMPERSAND_ERROR, isSendableEnvValue } from '../domain/requests/request-rules';
import { PREFER_MODES, type Prefer } from '../domain/hosts/matching';
import { AccessFields } from './access-requests';
import { boundText, MIN_HOURS } from '../domain/requests/number-bounds';
import { HostFilterFields, image, WaitSecondsSchema } from './order-requests';
import { bodyObject, CallbackUrlSchema, describe, ENV_NAME, gpuType, optional, price, refuse } from './request-fields';

/** A field that is one of `modes`: absent/null → undefined; one of the modes → itself; else the 400 text `error`. */
/* @__NO_SIDE_EFFECTS__ */
const modeField = <M extends string>(modes: readonly M[], error: string, description: string) =>
  describe(
    z.pipe(
      z.unknown(),
      z.transform((value, ctx): M | undefined => {
        if (value === undefined || value === null) return undefined;
        return typeof value === 'string' && (modes as readonly string[]).includes(value)
          ? (value as M)
          : refuse(ctx, error);
      }),
    ),
    { description, type: 'string', enum: [...modes] },
  );

export const PREFER_ERROR = `prefer must be one of ${PREFER_MODES.join(', ')}`;

/** `prefer` of create-order (issue 31 §3). */
export const PreferSchema = modeField<Prefer>(
  PREFER_MODES,
  PREFER_ERROR,
  "Which matching server is rented: `first` (the marketplace's order, the spec's rule), `cheapest` (lowest USD/h of the order type), " +
    '`reliable` (highest reliability, then rating, then price); default DEFAULT_PREFER. The result says why (`chosen`).',
);

/** POST /webhook/create-order. */
export const CreateOrderBodySchema = bodyObject({
  gpu_type: describe(gpuType('gpu_type required'), {
    description: 'GPU model to match, e.g. "RTX 4090" (case-insensitive substring)',
  }),
  max_price: optional(price('max_price')),
  image,
  use_spot: describe(optional(z.boolean({ error: 'use_spot must be a boolean' })), {
    description: 'Spot order (default true)',
  }),
  callback_url: optional(CallbackUrlSchema),
  env: describe(
    optional(
      z
        .record(
          z.string().check(z.regex(ENV_NAME)),
          z
            .string({ error: 'env values must be strings' })
            .check(
              z.maxLength(4096, 'env values must be at most 4096 characters'),
              z.refine(isSendableEnvValue, ENV_AMPERSAND_ERROR),
            ),
          {
            // zod reports a bad key on the record itself.
            error: (issue) =>
              issue.code === 'invalid_key'
                ? 'env names must be letters, digits and _'
                : 'env must be an object of strings',
          },
        )
        .check(
          z.refine((env: Record<string, string>) => Object.keys(env).length <= 50, 'env may hold at most 50 variables'),
        ),
    ),
    {
      description:
        'Container environment variables; values are never stored in the task record. A value must not contain `&` (the production marketplace fails such orders): 400 `env values must not contain "&"`',
    },
  ),
});
export type CreateOrderBody = z.infer<typeof CreateOrderBodySchema>;

// ---- leases (issue 14; the rules are in domain/leases/lease.ts) ----------------------------------------

/** `max_hours` as a create-order body field, to add with `z.extend(CreateOrderBodySchema, { max_hours: z.optional(MaxHoursSchema) })`. */
export const MaxHoursSchema = describe(
  z.pipe(
    z.unknown(),
    z.transform((value, ctx): number | undefined => {
      const parsed = parseMaxHours(value);
      return parsed.ok ? parsed.value : refuse(ctx, parsed.error);
    }),
  ),
  {
    description: `Lease in hours (at least ${boundText(MIN_HOURS)}, at most ${MAX_LEASE_HOURS}, fractions allowed), counted from readiness; the relay cancels the order when it ends`,
    type: 'number',
    minimum: MIN_HOURS,
    maximum: MAX_LEASE_HOURS,
  },
);

/** `on_outbid`: absent/null → undefined (notify); one of the modes → itself; else ON_OUTBID_ERROR. */
export const OnOutbidSchema = modeField<OnOutbid>(
  ON_OUTBID_MODES,
  ON_OUTBID_ERROR,
  'What the relay does when this spot order is outbid (paused or offline while another renter has the server): `notify` (default: report only), ' +
    '`rebid` (raise the bid through set_spot_price in steps the marketplace accepts, never above max_price; needs a spot order and max_price), ' +
    '`replace` (place a new order for the same request, with the lease that is left, on another server through the create-order workflow, ' +
    'then cancel the lost one; the lease, extend-order and set-spot-price follow the new order; needs a spot order), ' +
    '`rebid_then_replace` (rebid, then replace at the ceiling; needs a spot order and max_price). ' +
    'Events: order.outbid, order.rebid, order.replaced, order.recovery_failed.',
);

/** POST /webhook/create-order with its lease field (and issue 23's wait_seconds and on_outbid): the handler and the OpenAPI document use this one. */
export const CreateOrderLeaseBodySchema = z
  .extend(CreateOrderBodySchema, {
    max_hours: z.optional(MaxHoursSchema),
    wait_seconds: z.optional(WaitSecondsSchema),
    on_outbid: z.optional(OnOutbidSchema),
    lifecycle_events: z.optional(
      describe(z.boolean('lifecycle_events must be true or false'), {
        description:
          "false: `callback_url` receives the task's result only, not the order's later lifecycle events (what the CLI's --wait listener asks: it is gone once the result arrived). Default true",
      }),
    ),
    ...HostFilterFields,
    prefer: z.optional(PreferSchema),
    ...AccessFields,
  })
  .check((ctx) => {
    const problem = onOutbidProblem(ctx.value);
    if (problem) ctx.issues.push({ code: 'custom', message: problem, input: ctx.value });
  });
export type CreateOrderLeaseBody = z.infer<typeof CreateOrderLeaseBodySchema>;
