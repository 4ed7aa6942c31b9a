/**
 * Zod schemas of the marketplace's answers, in both dialects: the spec's (marketplace-api.md) and
 * production's (marketplace-live.md). Envelopes are checked strictly; list elements are read one by
 * one by `reader.ts`, so one element the reader cannot use never sinks a whole answer.
 *
 * Objects are loose: fields nobody lists pass through untouched, so an API that grows a field does
 * not break us.
 */
import * as z from 'zod/mini';
import type { Wallet } from '../domain/marketplace-types';

/**
 * Name of the numeric result code field carried by every response body. The spec does not name
 * it; `code` is what the marketplace's own clients read, and the simulator uses the same.
 */
export const RESULT_CODE_FIELD = 'code';

/** Result codes of marketplace-api.md §7.1. */
export const ResultCode = {
  Success: 0,
  DatabaseError: 1,
  InvalidInput: 2,
  InvalidApiKey: 3,
  InvalidEndpoint: 4,
  RateLimited: 5,
  SeeError: 6,
} as const;

/**
 * `z.catch(schema, value)`: the value in place of anything the schema refuses. Built as zod's own
 * `catch` builds it (a ZodMiniCatch whose catchValue returns the value) rather than by calling it:
 * `z.catch` reaches `core.util.constantCatch` through two namespaces, which esbuild cannot resolve
 * statically, so every bundle that called it carried all of zod's util module (~7 KB; BENCHMARKS.md §14).
 */
const fallback = <T extends z.core.$ZodType>(innerType: T, value: z.output<T>): z.ZodMiniCatch<T> =>
  // The constructor is typed for the default inner type only; the def is the one `z.catch` builds.
  new z.ZodMiniCatch({ type: 'catch', innerType, catchValue: () => value }) as unknown as z.ZodMiniCatch<T>;

/**
 * A schema built on first use, once (issue 40 §1): building every answer's schema at import cost
 * each function that talks to the marketplace ~220 zod objects at every cold start, for the one or
 * two endpoints it calls. Each exported schema is such a getter: `ServerElementSchema().safeParse(…)`.
 */
const built = <T>(build: () => T): (() => T) => {
  let schema: T | undefined;
  return () => (schema ??= build());
};

const OptionalNumber = () => fallback(z.optional(z.number()), undefined);
/** A field that is dropped (undefined) when it is absent or not of its type. */
const lenient = <T extends z.core.SomeType>(schema: T) => fallback(z.optional(schema), undefined);

/**
 * The envelope every response shares: the result code and, with code 6, the `error` string plus
 * the numbers production sends with some reasons (`min_price`, `max_step`, `time_to_lowering`).
 */
export const EnvelopeSchema = built(() =>
  z.looseObject({
    code: z.int(),
    error: lenient(z.string()),
    min_price: OptionalNumber(),
    max_step: OptionalNumber(),
    time_to_lowering: OptionalNumber(),
  }),
);
export type Envelope = z.infer<ReturnType<typeof EnvelopeSchema>>;

// ---------------------------------------------------------------- list elements (read by reader.ts)

/** A price map keyed by currency: only finite numbers above `min` are kept; anything else is "no price there". */
const priceMap = (keep: (price: number) => boolean) =>
  z.pipe(
    z.optional(fallback(z.record(z.string(), z.unknown()), {})),
    z.transform((map) =>
      Object.fromEntries(
        Object.entries(map ?? {}).filter(
          (e): e is [string, number] => typeof e[1] === 'number' && Number.isFinite(e[1]) && keep(e[1]),
        ),
      ),
    ),
  );

/** `price.usd` as either dialect writes it: `on_demand_<coin slug>` keys and `spot` (0 = none in production). */
const UsdPricesSchema = () => z.optional(fallback(z.record(z.string(), z.unknown()), {}));

/**
 * A boolean as the marketplace writes it: `true`/`false`, `1`/`0`, or those as strings
 * (`"true"`, `"false"`, `"1"`, `"0"`, any case). Anything else is not a boolean (undefined).
 */
export const readBoolean = (value: unknown): boolean | undefined => {
  if (typeof value === 'boolean') return value;
  if (value === 1 || value === 0) return value === 1;
  if (typeof value !== 'string') return undefined;
  const text = value.trim().toLowerCase();
  return text === 'true' || text === '1' ? true : text === 'false' || text === '0' ? false : undefined;
};

/** A boolean field in any of {@link readBoolean}'s spellings; unreadable or absent = `fallback`. */
const flexibleBoolean = <F extends boolean | undefined>(fallback: F) =>
  z.pipe(
    z.optional(z.unknown()),
    z.transform((value): boolean | F => readBoolean(value) ?? fallback),
  );

/** A number, or a string holding one (`"1714608000"`); anything else is `fallback`. */
const numberOrNumericString = (fallback: number) =>
  z.pipe(
    z.optional(z.unknown()),
    z.transform((value): number => {
      if (typeof value === 'number') return Number.isFinite(value) ? value : fallback;
      if (typeof value === 'string' && /^\s*\d+(\.\d+)?\s*$/.test(value)) return Number(value);
      return fallback;
    }),
  );

/**
 * `gpu_array` as read: the trimmed non-empty names, a list of lists flattened (one SDK hands it on
 * that way, S7). Absent, or holding anything but strings and lists of strings, it is `[]` (the
 * reader then takes the GPUs from `specs.gpu`).
 */
const GpuArraySchema = () =>
  z.pipe(
    z.optional(z.unknown()),
    z.transform((value): string[] => {
      if (!Array.isArray(value)) return [];
      const flat: unknown[] = value.flat(3);
      if (!flat.every((name): name is string => typeof name === 'string')) return [];
      return flat.map((name) => name.trim()).filter((name) => name.length > 0);
    }),
  );

/**
 * A listing element. Only `id` and GPU names (`gpu_array`, else `specs.gpu`: the reader checks) are
 * needed to use it; every other field falls back to the value that keeps the relay safe (a server
 * whose `rented` cannot be read counts as rented, one without `allowed_coins` accepts no order).
 */
export const ServerElementSchema = built(() =>
  z.looseObject({
    id: z.int(),
    gpu_array: GpuArraySchema(),
    owner: fallback(z.int(), 0),
    mrl: fallback(z.number().check(z.nonnegative()), 0),
    rented: flexibleBoolean(true),
    price: fallback(
      z.looseObject({
        on_demand: priceMap((p) => p >= 0),
        // A spot price of 0 is production's "no spot price": it cannot be bid on.
        spot: priceMap((p) => p > 0),
        usd: UsdPricesSchema(),
      }),
      { on_demand: {}, spot: {}, usd: {} },
    ),
    specs: fallback(
      z.looseObject({
        gpu: fallback(z.string(), ''),
        cpu: fallback(z.string(), ''),
        ram: fallback(z.number(), 0),
        disk: fallback(z.string(), ''),
      }),
      { gpu: '', cpu: '', ram: 0, disk: '' },
    ),
    reliability: fallback(z.number().check(z.gte(0), z.lte(1)), 0),
    rating: fallback(z.looseObject({ avg: fallback(z.number(), 0), cnt: fallback(z.int(), 0) }), { avg: 0, cnt: 0 }),
    allowed_coins: fallback(z.array(z.string()), []),
  }),
);

/** An order in the spec's shape (marketplace-api.md §2.2). */
export const SpecOrderElementSchema = built(() =>
  z.looseObject({
    order_id: z.int(),
    renting_server: z.int(),
    status: z.string(),
    created: z.int(),
    type: fallback(z.string(), 'on-demand'),
    currency: fallback(z.string(), ''),
    price: fallback(z.number(), 0),
    // An order still in creating_order has not started yet.
    started: z.pipe(
      fallback(z.nullish(z.int()), 0),
      z.transform((v) => v ?? 0),
    ),
    connection: z.pipe(
      fallback(
        z.nullish(
          z.looseObject({
            ssh: lenient(z.string()),
            jupyter: lenient(z.string()),
            ports: lenient(z.record(z.string(), z.string())),
          }),
        ),
        {},
      ),
      z.transform((v) => v ?? {}),
    ),
  }),
);

/** A port as text: production writes numbers or strings. */
const portText = () => z.pipe(z.union([z.string(), z.number()]), z.transform(String));

/** An order in production's shape (marketplace-live.md): no `status`; `si`, `ct`, `online`, `expired`, `pub_cluster`, `tcp_ports`. */
export const LiveOrderElementSchema = built(() =>
  z.looseObject({
    id: z.int(),
    si: z.int(),
    ct: numberOrNumericString(0),
    spot: flexibleBoolean(undefined),
    expired: flexibleBoolean(undefined),
    online: flexibleBoolean(undefined),
    currency: fallback(z.string(), ''),
    price: fallback(z.number(), 0),
    pub_cluster: fallback(z.array(z.string()), []),
    tcp_ports: fallback(z.array(portText()), []),
    http_port: lenient(portText()),
    http_pub: lenient(z.string()),
    /** What the order has cost so far, in its currency, the renter fee included (marketplace-live.md, third round). */
    spend: lenient(z.number()),
    /** The fee charged for placing the order, USD (`0.1` recorded). */
    creation_fee: lenient(z.number()),
  }),
);

export const WalletSchema = built(() =>
  z.looseObject({
    name: z.string(),
    balance: z.number(),
  }),
);

// ---------------------------------------------------------------- answers

/** GET /v1/marketplace: elements are read one by one (reader.ts). */
export const MarketplaceResponseSchema = built(() => z.extend(EnvelopeSchema(), { servers: z.array(z.unknown()) }));
/** GET /v1/wallets */
export const WalletsResponseSchema = built(() => z.extend(EnvelopeSchema(), { wallets: z.array(WalletSchema()) }));
/** POST /v1/create_order; production answers `{code: 0}` alone (the caller then reconciles through my_orders). */
export const CreateOrderResponseSchema = built(() => z.extend(EnvelopeSchema(), { order_id: z.optional(z.int()) }));
/** GET /v1/my_orders: elements are read one by one (reader.ts). */
export const MyOrdersResponseSchema = built(() => z.extend(EnvelopeSchema(), { orders: z.array(z.unknown()) }));
/** POST /v1/cancel_order: only the result code is specified. */
export const CancelOrderResponseSchema = EnvelopeSchema;
/** POST /v1/set_spot_price: only the result code is specified. */
export const SetSpotPriceResponseSchema = EnvelopeSchema;
/**
 * GET /v1/spot_marketplace: the shape of `market` differs by dialect and nothing reads it yet, so it
 * stays opaque. An answer without `market` (or with `market: null`) is "no market" (`null`).
 */
export const SpotMarketResponseSchema = built(() =>
  z.extend(EnvelopeSchema(), {
    market: z.pipe(
      z.optional(z.unknown()),
      z.transform((market) => market ?? null),
    ),
  }),
);

// Compile-time check that the parsed wallet satisfies the domain type the port returns.
type Assignable<T, U extends T> = U;
export type _WalletCheck = Assignable<Wallet, z.infer<ReturnType<typeof WalletSchema>>>;
