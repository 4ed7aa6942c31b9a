/**
 * Request shapes of the relay's HTTP routes (order-relay.md §4), as zod schemas. They validate the
 * signed bodies with the spec's exact 400 messages and also generate the OpenAPI document, so the two
 * cannot drift. Unknown fields are refused with 400 `unknown field <name>` (issue 29: a body dropped
 * silently of what it did not know is how one route's signed body passed as another's). The rules they apply are pure and live in
 * lambdas/domain (request-rules.ts, lease.ts, standing-orders.ts, caller-keys.ts).
 */
import * as z from 'zod/mini';
import { SCOPES } from '../../contract/scopes';
import { refusedUrlReason } from '../domain/address-policy';
import { DEFAULT_KEY_NAME, endOfUtcDay, KEY_NAME_PATTERN } from '../domain/teams/caller-keys';
import { ON_OUTBID_ERROR, ON_OUTBID_MODES, onOutbidProblem, type OnOutbid } from '../domain/recovery/on-outbid';
import {
  DESIRED_PRICE_ERROR,
  DESIRED_PRICE_RANGE_ERROR,
  EXTEND_REQUIRED_ERROR,
  HOURS_ERROR,
  isLeaseHours,
  MAX_DESIRED_PRICE,
  MAX_LEASE_HOURS,
  MAX_SPOT_RAISE_FACTOR,
  MIN_DESIRED_PRICE,
  parseMaxHours,
  SPOT_PRICE_REQUIRED_ERROR,
} from '../domain/leases/lease';
import {
  ENV_AMPERSAND_ERROR,
  isSendableEnvValue,
  MAX_WAIT_SECONDS,
  WAIT_SECONDS_ERROR,
  type ParseOutcome,
} from '../domain/requests/request-rules';
import { CANCEL_TASK_REQUIRED } from '../domain/recovery/standing-orders';
import { isTaskId } from '../domain/requests/task-view';
import { refuse } from './refuse';
import { PREFER_MODES, type Prefer } from '../domain/hosts/matching';

/** Longest callback_url accepted; long enough for any real receiver, short enough to bound storage. */
export const MAX_URL_LENGTH = 2048;
const MAX_GPU_TYPE_LENGTH = 100;
const MAX_IMAGE_LENGTH = 512;

/** JSON `null` counts as "not sent" for optional fields: many clients serialize absent values that way. */
export const optional = <T extends z.core.SomeType>(
  schema: T,
): z.ZodMiniPipe<
  z.ZodMiniOptional<z.ZodMiniNullable<T>>,
  z.ZodMiniTransform<z.output<T> | undefined, z.output<T> | null | undefined>
> =>
  z.pipe(
    z.nullish(schema),
    z.transform((v: z.output<T> | null | undefined): z.output<T> | undefined => v ?? undefined),
  );

export { refuse };

/** The 400 text of a body field no route schema names (issue 29). */
export const unknownFieldText = (name: string): string => `unknown field ${name.slice(0, 100)}`;

/** A request body: a strict object, whose first unknown field is refused with {@link unknownFieldText}. */
export const bodyObject = <T extends z.core.$ZodLooseShape>(shape: T): z.ZodMiniObject<T, z.core.$strict> =>
  z.strictObject(shape, {
    error: (issue) => (issue.code === 'unrecognized_keys' ? unknownFieldText(String(issue.keys[0])) : undefined),
  });

/** Schema metadata for the OpenAPI document (classic zod's `.meta()`). */
export const describe = <T extends z.ZodMiniType>(schema: T, meta: Record<string, unknown>): T =>
  schema.check(z.meta(meta));

const gpuType = (requiredMessage: string) =>
  z
    .string({ error: requiredMessage })
    .check(
      z.trim(),
      z.minLength(1, requiredMessage),
      z.maxLength(MAX_GPU_TYPE_LENGTH, `gpu_type must be at most ${MAX_GPU_TYPE_LENGTH} characters`),
    );

/** A positive USD price; the message names the field for a wrong type or a non-positive value. */
const price = (field: string, requiredMessage?: string) =>
  describe(
    z
      .number({
        error: (issue) =>
          issue.input === undefined && requiredMessage ? requiredMessage : `${field} must be a number`,
      })
      .check(z.positive(`${field} must be a positive number`)),
    { description: `${field} in USD per hour` },
  );

/**
 * callback_url: an absolute http(s) URL. The private-address policy depends on configuration, so it
 * is applied by {@link callbackUrlProblem} after parsing, not here.
 */
export const CallbackUrlSchema = describe(
  z.string({ error: 'callback_url must be an absolute http(s) URL' }).check(
    z.maxLength(MAX_URL_LENGTH, `callback_url must be at most ${MAX_URL_LENGTH} characters`),
    z.refine((url: string) => isAbsoluteHttpUrl(url), 'callback_url must be an absolute http(s) URL'),
  ),
  { description: 'Absolute http(s) URL that receives the result as a signed JSON POST', format: 'uri' },
);

const isAbsoluteHttpUrl = (url: string): boolean => {
  try {
    const parsed = new URL(url);
    return (parsed.protocol === 'http:' || parsed.protocol === 'https:') && parsed.hostname !== '';
  } catch {
    return false;
  }
};

const image = describe(
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

const ENV_NAME = /^[A-Za-z_][A-Za-z0-9_]{0,127}$/;

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

/** A number in [min, max]: absent/null → undefined; else the 400 text naming the field and its range. */
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
            (!integer || Number.isInteger(value))
          )
            return value;
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

/** A field that is one of `modes`: absent/null → undefined; one of the modes → itself; else the 400 text `error`. */
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

/**
 * order_id: an integer, or a string of digits (what form-minded clients send). The spec's "missing
 * or falsy" rule comes first, so 0, "", null and false get `order_id required`.
 */
export const OrderIdSchema = describe(
  z.pipe(
    z.unknown(),
    z.transform((value, ctx): number => {
      if (!value) {
        return refuse(ctx, 'order_id required');
      }
      const n =
        typeof value === 'number'
          ? value
          : typeof value === 'string' && /^\d+$/.test(value)
            ? Number(value)
            : Number.NaN;
      if (!Number.isSafeInteger(n)) {
        return refuse(ctx, 'order_id must be an integer');
      }
      if (n <= 0) {
        return refuse(ctx, 'order_id must be a positive integer');
      }
      return n;
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

/** POST /webhook/cancel-order. */
export const CancelOrderBodySchema = bodyObject({
  order_id: OrderIdSchema,
  callback_url: optional(CallbackUrlSchema),
});
export type CancelOrderBody = z.infer<typeof CancelOrderBodySchema>;

const PRICE_ALERT_REQUIRED = 'gpu_type and target_price required';

/** POST /webhook/price-alert. */
export const PriceAlertBodySchema = bodyObject({
  gpu_type: gpuType(PRICE_ALERT_REQUIRED),
  target_price: describe(
    z
      .number({
        error: (issue) =>
          issue.input === undefined || issue.input === null ? PRICE_ALERT_REQUIRED : 'target_price must be a number',
      })
      .check(z.positive('target_price must be a positive number')),
    { description: 'Alert when a server is available at or under this USD/hour spot price' },
  ),
  image,
  callback_url: optional(CallbackUrlSchema),
  /** The queued create-order's wait (issue 23): it may stand when the matched server is gone by then. */
  wait_seconds: optional(WaitSecondsSchema),
  ...HostFilterFields,
});
export type PriceAlertBody = z.infer<typeof PriceAlertBodySchema>;

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

// ---- caller keys (issue 24; the rules are in domain/teams/caller-keys.ts) ---------------------------------

/** POST /admin/keys body. */
export const CreateKeyBodySchema = bodyObject({
  name: z.string().check(
    z.regex(KEY_NAME_PATTERN, 'name must be 1-64 lower-case letters, digits, - or _, starting with a letter or digit'),
    z.refine((name) => name !== DEFAULT_KEY_NAME, 'name "default" is the shared webhook secret\'s key'),
  ),
  scopes: z
    .array(z.enum(SCOPES, `scopes must name ${SCOPES.join(', ')}`))
    .check(z.minLength(1, 'scopes must name at least one scope')),
  orders_per_hour: z.optional(
    z.int('orders_per_hour must be a positive integer').check(z.positive('orders_per_hour must be a positive integer')),
  ),
  budget_usd_per_day: z.optional(
    z
      .number('budget_usd_per_day must be a positive number')
      .check(z.positive('budget_usd_per_day must be a positive number')),
  ),
  expires: z.optional(
    z.string().check(z.refine((d) => endOfUtcDay(d) !== undefined, 'expires must be a date YYYY-MM-DD')),
  ),
  slack_user: z.optional(
    z.string().check(z.regex(/^[A-Z0-9]{2,64}$/, 'slack_user must be a Slack user ID like U0123ABC')),
  ),
});

/** POST /admin/hosts/{server_id}/avoid (issue 31 §2): for how long and why; both optional. */
export const AvoidHostBodySchema = bodyObject({
  hours: z.optional(
    z
      .number('hours must be a number greater than 0 and at most 720')
      .check(
        z.positive('hours must be a number greater than 0 and at most 720'),
        z.lte(720, 'hours must be a number greater than 0 and at most 720'),
      ),
  ),
  reason: z.optional(
    z
      .string('reason must be a text of at most 200 characters')
      .check(z.maxLength(200, 'reason must be a text of at most 200 characters')),
  ),
});

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
    description: `Lease in hours (> 0, at most ${MAX_LEASE_HOURS}, fractions allowed), counted from readiness; the relay cancels the order when it ends`,
    type: 'number',
    exclusiveMinimum: 0,
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
  })
  .check((ctx) => {
    const problem = onOutbidProblem(ctx.value);
    if (problem) ctx.issues.push({ code: 'custom', message: problem, input: ctx.value });
  });
export type CreateOrderLeaseBody = z.infer<typeof CreateOrderLeaseBodySchema>;

/** order_id with a route's own "required" text; the other order_id texts are OrderIdSchema's. */
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
const requiredNumber = (
  requiredMessage: string,
  invalidMessage: string,
  valid: (n: unknown) => n is number,
  meta: Record<string, unknown>,
) =>
  describe(
    z.pipe(
      z.unknown(),
      z.transform((value, ctx): number => {
        if (value === undefined || value === null) return refuse(ctx, requiredMessage);
        return valid(value) ? value : refuse(ctx, invalidMessage);
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
  hours: requiredNumber(EXTEND_REQUIRED_ERROR, HOURS_ERROR, isLeaseHours, {
    description: `Hours added to the lease (> 0, at most ${MAX_LEASE_HOURS}); the new end is max(now, current end) + hours`,
    type: 'number',
    exclusiveMinimum: 0,
    maximum: MAX_LEASE_HOURS,
  }),
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

// ---- parsing -----------------------------------------------------------------------------

/**
 * Parses `body` with `schema`. On failure the error is the first issue's message, which is always
 * one of the texts above: the spec's exact messages first, since fields are checked in order.
 */
export const parseBody = <S extends z.core.$ZodType>(schema: S, body: unknown): ParseOutcome<z.infer<S>> => {
  const result = z.safeParse(schema, body);
  if (result.success) return { ok: true, value: result.data };
  const issue = result.error.issues[0];
  // A nested issue without a message of ours (e.g. inside env) still names where it is.
  const message =
    issue?.message && !issue.message.startsWith('Invalid input')
      ? issue.message
      : `Invalid field ${issue?.path.join('.') ?? ''}`.trim();
  return { ok: false, error: message };
};

/**
 * Why a callback_url is refused, as a 400 text naming the field, or undefined when it is fine.
 * With private callbacks allowed (local runtime) only the absolute-http(s) rule applies.
 */
export const callbackUrlProblem = (url: string | undefined, allowPrivate: boolean): string | undefined => {
  if (url === undefined) return undefined;
  if (allowPrivate) return isAbsoluteHttpUrl(url) ? undefined : 'callback_url must be an absolute http(s) URL';
  const reason = refusedUrlReason(url);
  return reason ? `callback_url ${reason}` : undefined;
};
