/**
 * The building blocks every request body shares (issue 32: each route's bundle imports only its own
 * body schemas, from task-requests.ts, order-requests.ts or admin-requests.ts; requests.ts gathers
 * them all for the OpenAPI document and the tests). Unknown fields are refused with 400
 * `unknown field <name>` (issue 29).
 */
import * as z from 'zod/mini';
import { refusedUrlReason } from '../domain/address-policy';
import type { ParseOutcome } from '../domain/requests/request-rules';
import { boundText, MAX_USD_PER_HOUR, MIN_USD_PER_HOUR, usdPerHourRangeText } from '../domain/requests/number-bounds';
import { refuse } from './refuse';

/** Longest callback_url accepted; long enough for any real receiver, short enough to bound storage. */
export const MAX_URL_LENGTH = 2048;
export const MAX_GPU_TYPE_LENGTH = 100;
export const MAX_IMAGE_LENGTH = 512;

/** JSON `null` counts as "not sent" for optional fields: many clients serialize absent values that way. */
/* @__NO_SIDE_EFFECTS__ */
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
/* @__NO_SIDE_EFFECTS__ */
export const bodyObject = <T extends z.core.$ZodLooseShape>(shape: T): z.ZodMiniObject<T, z.core.$strict> =>
  z.strictObject(shape, {
    error: (issue) => (issue.code === 'unrecognized_keys' ? unknownFieldText(String(issue.keys[0])) : undefined),
  });

/**
 * Schema metadata for the OpenAPI document (classic zod's `.meta()`), registered on `schema` itself:
 * `schema.check(z.meta(meta))` registered the same metadata on a clone, i.e. built every described
 * schema twice (and a check) at every cold start, for a document the functions never render
 * (BENCHMARKS.md §15). So `schema` must be the caller's own, not one shared with an undescribed use.
 */
/* @__NO_SIDE_EFFECTS__ */
export const describe = <T extends z.ZodMiniType>(schema: T, meta: Record<string, unknown>): T => {
  z.globalRegistry.add(schema, { ...z.globalRegistry.get(schema), ...meta });
  return schema;
};

/** A required GPU model name; `requiredMessage` when absent or empty. */
/* @__NO_SIDE_EFFECTS__ */
export const gpuType = (requiredMessage: string) =>
  z
    .string({ error: requiredMessage })
    .check(
      z.trim(),
      z.minLength(1, requiredMessage),
      z.maxLength(MAX_GPU_TYPE_LENGTH, `gpu_type must be at most ${MAX_GPU_TYPE_LENGTH} characters`),
    );

/**
 * A positive USD price per hour within [MIN_USD_PER_HOUR, MAX_USD_PER_HOUR] (issue 38 §6); the message
 * names the field for a wrong type, a non-positive value and a value out of range.
 */
/* @__NO_SIDE_EFFECTS__ */
export const price = (field: string, requiredMessage?: string, description = `${field} in USD per hour`) =>
  describe(
    z
      .number({
        error: (issue) =>
          (issue.input === undefined || issue.input === null) && requiredMessage
            ? requiredMessage
            : `${field} must be a number`,
      })
      .check(
        z.positive(`${field} must be a positive number`),
        z.gte(MIN_USD_PER_HOUR, usdPerHourRangeText(field)),
        z.lte(MAX_USD_PER_HOUR, usdPerHourRangeText(field)),
      ),
    { description: `${description} (${boundText(MIN_USD_PER_HOUR)} to ${MAX_USD_PER_HOUR})` },
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

export const ENV_NAME = /^[A-Za-z_][A-Za-z0-9_]{0,127}$/;

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
