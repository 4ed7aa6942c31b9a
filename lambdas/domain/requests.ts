/**
 * Request and response shapes of the relay's HTTP routes (order-relay.md §4), as zod schemas. They
 * validate the signed bodies with the spec's exact 400 messages and also generate the OpenAPI
 * document, so the two cannot drift. Unknown fields are ignored (zod strips them).
 */
import * as z from 'zod/mini';
import { refusedUrlReason } from './address-policy';
import type { PortProtocol } from './marketplace-types';
import type { CancelOrderInput, CreateOrderInput, PriceAlertInput, StatusInput } from './task';

/** Longest callback_url accepted; long enough for any real receiver, short enough to bound storage. */
export const MAX_URL_LENGTH = 2048;
const MAX_GPU_TYPE_LENGTH = 100;
const MAX_IMAGE_LENGTH = 512;

/** JSON `null` counts as "not sent" for optional fields: many clients serialize absent values that way. */
export const optional = <T extends z.core.SomeType>(
  schema: T,
): z.ZodMiniPipe<z.ZodMiniOptional<z.ZodMiniNullable<T>>, z.ZodMiniTransform<z.output<T> | undefined, z.output<T> | null | undefined>> =>
  z.pipe(z.nullish(schema), z.transform((v: z.output<T> | null | undefined): z.output<T> | undefined => v ?? undefined));

/** Fails a `z.transform` with `message` (classic zod's `ctx.addIssue` + `z.NEVER`). */
export const refuse = (ctx: z.core.ParsePayload, message: string): never => {
  ctx.issues.push({ code: 'custom', message, input: ctx.value });
  return z.NEVER;
};

/** Schema metadata for the OpenAPI document (classic zod's `.meta()`). */
export const describe = <T extends z.ZodMiniType>(schema: T, meta: Record<string, unknown>): T => schema.check(z.meta(meta));

const gpuType = (requiredMessage: string) =>
  z.string({ error: requiredMessage }).check(
    z.trim(),
    z.minLength(1, requiredMessage),
    z.maxLength(MAX_GPU_TYPE_LENGTH, `gpu_type must be at most ${MAX_GPU_TYPE_LENGTH} characters`),
  );

/** A positive USD price; the message names the field for a wrong type or a non-positive value. */
const price = (field: string, requiredMessage?: string) =>
  describe(
    z
      .number({ error: (issue) => (issue.input === undefined && requiredMessage ? requiredMessage : `${field} must be a number`) })
      .check(z.positive(`${field} must be a positive number`)),
    { description: `${field} in USD per hour` },
  );

/**
 * callback_url: an absolute http(s) URL. The private-address policy depends on configuration, so it
 * is applied by {@link callbackUrlProblem} after parsing, not here.
 */
export const CallbackUrlSchema = describe(
  z
    .string({ error: 'callback_url must be an absolute http(s) URL' })
    .check(
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

/**
 * Production answers HTTP 500 code 1 to any container env value holding `&` (marketplace-live.md,
 * S6: an env matrix varying one character at a time), so such a value is refused at the door.
 */
export const ENV_AMPERSAND_ERROR = 'env values must not contain "&"';
/** Whether an env value can be sent to the marketplace (see ENV_AMPERSAND_ERROR). */
export const isSendableEnvValue = (value: string): boolean => !value.includes('&');

// ---- standing orders (issue 23; the rules are in standing-orders.ts) ----------------------------

/** The longest wait a standing order may ask for: 24 h. */
export const MAX_WAIT_SECONDS = 86_400;
export const WAIT_SECONDS_ERROR = `wait_seconds must be a whole number between 0 and ${MAX_WAIT_SECONDS}`;

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
    description: `Standing order: seconds to wait for a matching server when none is free now (0 = fail at once, the default; at most ${MAX_WAIT_SECONDS}). `
      + 'The task shows `waiting` meanwhile and is served first come, first served per GPU type; past the wait it fails with the no-match text.',
    type: 'integer',
    minimum: 0,
    maximum: MAX_WAIT_SECONDS,
  },
);

/** POST /webhook/create-order. */
export const CreateOrderBodySchema = z.object({
  gpu_type: describe(gpuType('gpu_type required'), { description: 'GPU model to match, e.g. "RTX 4090" (case-insensitive substring)' }),
  max_price: optional(price('max_price')),
  image,
  use_spot: describe(optional(z.boolean({ error: 'use_spot must be a boolean' })), { description: 'Spot order (default true)' }),
  callback_url: optional(CallbackUrlSchema),
  env: describe(
    optional(
      z
        .record(
          z.string().check(z.regex(ENV_NAME)),
          z.string({ error: 'env values must be strings' }).check(
            z.maxLength(4096, 'env values must be at most 4096 characters'),
            z.refine(isSendableEnvValue, ENV_AMPERSAND_ERROR),
          ),
          {
            // zod reports a bad key on the record itself.
            error: (issue) => (issue.code === 'invalid_key' ? 'env names must be letters, digits and _' : 'env must be an object of strings'),
          },
        )
        .check(z.refine((env: Record<string, string>) => Object.keys(env).length <= 50, 'env may hold at most 50 variables')),
    ),
    { description: 'Container environment variables; values are never stored in the task record. A value must not contain `&` (the production marketplace fails such orders): 400 `env values must not contain "&"`' },
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
    const n = typeof value === 'number' ? value : typeof value === 'string' && /^\d+$/.test(value) ? Number(value) : Number.NaN;
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
    anyOf: [{ type: 'integer', minimum: 1 }, { type: 'string', pattern: '^\\d+$' }],
  },
);

/** POST /webhook/cancel-order. */
export const CancelOrderBodySchema = z.object({
  order_id: OrderIdSchema,
  callback_url: optional(CallbackUrlSchema),
});
export type CancelOrderBody = z.infer<typeof CancelOrderBodySchema>;

const PRICE_ALERT_REQUIRED = 'gpu_type and target_price required';

/** POST /webhook/price-alert. */
export const PriceAlertBodySchema = z.object({
  gpu_type: gpuType(PRICE_ALERT_REQUIRED),
  target_price: describe(
    z
      .number({ error: (issue) => (issue.input === undefined || issue.input === null ? PRICE_ALERT_REQUIRED : 'target_price must be a number') })
      .check(z.positive('target_price must be a positive number')),
    { description: 'Alert when a server is available at or under this USD/hour spot price' },
  ),
  image,
  callback_url: optional(CallbackUrlSchema),
  /** The queued create-order's wait (issue 23): it may stand when the matched server is gone by then. */
  wait_seconds: optional(WaitSecondsSchema),
});
export type PriceAlertBody = z.infer<typeof PriceAlertBodySchema>;

/** POST /webhook/status: the body is optional; an empty body counts as `{}`. */
export const StatusBodySchema = z.object({
  callback_url: optional(CallbackUrlSchema),
});
export type StatusBody = z.infer<typeof StatusBodySchema>;

// ---- parsing and normalization ---------------------------------------------------------------

export type ParseOutcome<T> = { readonly ok: true; readonly value: T } | { readonly ok: false; readonly error: string };

/**
 * Parses `body` with `schema`. On failure the error is the first issue's message, which is always
 * one of the texts above: the spec's exact messages first, since fields are checked in order.
 */
export const parseBody = <S extends z.core.$ZodType>(schema: S, body: unknown): ParseOutcome<z.infer<S>> => {
  const result = z.safeParse(schema, body);
  if (result.success) return { ok: true, value: result.data };
  const issue = result.error.issues[0];
  // A nested issue without a message of ours (e.g. inside env) still names where it is.
  const message = issue?.message && !issue.message.startsWith('Invalid input') ? issue.message : `Invalid field ${issue?.path.join('.') ?? ''}`.trim();
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

/** The configuration defaults a request is completed with. */
export interface RequestDefaults {
  readonly image: string;
  readonly currency: string;
  readonly ports: Readonly<Record<string, PortProtocol>>;
  /** DEFAULT_MAX_HOURS: the lease of an order that names no max_hours; undefined = no lease. */
  readonly maxHours?: number;
}

/** The create-order fields a caller may set (the parsed body, or a Slack `rent`). */
export interface CreateOrderFields {
  readonly gpu_type: string;
  readonly max_price?: number;
  readonly image?: string;
  readonly use_spot?: boolean;
  readonly callback_url?: string;
  readonly env?: Readonly<Record<string, string>>;
  /** Lease in hours (validated by lease.ts MaxHoursSchema). */
  readonly max_hours?: number;
  /** Standing order: seconds to wait for a server (validated by standing-orders.ts WaitSecondsSchema). */
  readonly wait_seconds?: number;
  /** Outbid recovery (issue 23; validated by on-outbid.ts OnOutbidSchema); absent = notify. */
  readonly on_outbid?: CreateOrderInput['on_outbid'] | 'notify';
}

/** Create-order fields + config defaults → the workflow's request (use_spot defaults to true). */
export const normalizeCreateOrder = (body: CreateOrderFields, defaults: RequestDefaults): CreateOrderInput => ({
  gpu_type: body.gpu_type,
  ...(body.max_price !== undefined ? { max_price: body.max_price } : {}),
  image: body.image ?? defaults.image,
  currency: defaults.currency,
  ports: defaults.ports,
  ...(body.env !== undefined && Object.keys(body.env).length > 0 ? { env: body.env } : {}),
  use_spot: body.use_spot ?? true,
  ...(body.callback_url !== undefined ? { callback_url: body.callback_url } : {}),
  ...((body.max_hours ?? defaults.maxHours) !== undefined ? { max_hours: body.max_hours ?? defaults.maxHours } : {}),
  ...(body.wait_seconds !== undefined && body.wait_seconds > 0 ? { wait_seconds: body.wait_seconds } : {}),
  ...(body.on_outbid !== undefined && body.on_outbid !== 'notify' ? { on_outbid: body.on_outbid } : {}),
});

export const normalizeCancelOrder = (body: { readonly order_id: number; readonly callback_url?: string }): CancelOrderInput => ({
  order_id: body.order_id,
  ...(body.callback_url !== undefined ? { callback_url: body.callback_url } : {}),
});

/** Price-alert body + the configured default image. */
export const normalizePriceAlert = (
  body: { readonly gpu_type: string; readonly target_price: number; readonly image?: string; readonly callback_url?: string; readonly wait_seconds?: number },
  defaults: Pick<RequestDefaults, 'image'>,
): PriceAlertInput => ({
  gpu_type: body.gpu_type,
  target_price: body.target_price,
  image: body.image ?? defaults.image,
  ...(body.callback_url !== undefined ? { callback_url: body.callback_url } : {}),
  ...(body.wait_seconds !== undefined && body.wait_seconds > 0 ? { wait_seconds: body.wait_seconds } : {}),
});

export const normalizeStatus = (body: { readonly callback_url?: string }): StatusInput =>
  body.callback_url !== undefined ? { callback_url: body.callback_url } : {};
