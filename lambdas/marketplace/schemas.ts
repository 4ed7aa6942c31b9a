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

const OptionalNumber = z.catch(z.optional(z.number()), undefined);
/** A field that is dropped (undefined) when it is absent or not of its type. */
const lenient = <T extends z.core.SomeType>(schema: T) => z.catch(z.optional(schema), undefined);

/**
 * The envelope every response shares: the result code and, with code 6, the `error` string plus
 * the numbers production sends with some reasons (`min_price`, `max_step`, `time_to_lowering`).
 */
export const EnvelopeSchema = z.looseObject({
  code: z.int(),
  error: lenient(z.string()),
  min_price: OptionalNumber,
  max_step: OptionalNumber,
  time_to_lowering: OptionalNumber,
});
export type Envelope = z.infer<typeof EnvelopeSchema>;

// ---------------------------------------------------------------- list elements (read by reader.ts)

/** A price map keyed by currency: only finite numbers above `min` are kept; anything else is "no price there". */
const priceMap = (keep: (price: number) => boolean) =>
  z.pipe(
    z.optional(z.catch(z.record(z.string(), z.unknown()), {})),
    z.transform((map) =>
      Object.fromEntries(
        Object.entries(map ?? {}).filter((e): e is [string, number] => typeof e[1] === 'number' && Number.isFinite(e[1]) && keep(e[1])),
      ),
    ),
  );

/** `price.usd` as either dialect writes it: `on_demand_<coin slug>` keys and `spot` (0 = none in production). */
const UsdPricesSchema = z.optional(z.catch(z.record(z.string(), z.unknown()), {}));

/**
 * A listing element. Only `id` and a non-empty `gpu_array` are needed to use it; every other field
 * falls back to the value that keeps the relay safe (a server whose `rented` cannot be read counts
 * as rented, one without `allowed_coins` accepts no order).
 */
export const ServerElementSchema = z.looseObject({
  id: z.int(),
  gpu_array: z.pipe(
    z.pipe(
      z.array(z.string()),
      z.transform((names: string[]) => names.map((n) => n.trim()).filter((n) => n.length > 0)),
    ),
    z.array(z.string()).check(z.minLength(1, 'no GPU names')),
  ),
  owner: z.catch(z.int(), 0),
  mrl: z.catch(z.number().check(z.nonnegative()), 0),
  rented: z.catch(z.boolean(), true),
  price: z.catch(
    z.looseObject({
      on_demand: priceMap((p) => p >= 0),
      // A spot price of 0 is production's "no spot price": it cannot be bid on.
      spot: priceMap((p) => p > 0),
      usd: UsdPricesSchema,
    }),
    { on_demand: {}, spot: {}, usd: {} },
  ),
  specs: z.catch(
    z.looseObject({
      gpu: z.catch(z.string(), ''),
      cpu: z.catch(z.string(), ''),
      ram: z.catch(z.number(), 0),
      disk: z.catch(z.string(), ''),
    }),
    { gpu: '', cpu: '', ram: 0, disk: '' },
  ),
  reliability: z.catch(z.number().check(z.gte(0), z.lte(1)), 0),
  rating: z.catch(z.looseObject({ avg: z.catch(z.number(), 0), cnt: z.catch(z.int(), 0) }), { avg: 0, cnt: 0 }),
  allowed_coins: z.catch(z.array(z.string()), []),
});

/** An order in the spec's shape (marketplace-api.md §2.2). */
export const SpecOrderElementSchema = z.looseObject({
  order_id: z.int(),
  renting_server: z.int(),
  status: z.string(),
  created: z.int(),
  type: z.catch(z.string(), 'on-demand'),
  currency: z.catch(z.string(), ''),
  price: z.catch(z.number(), 0),
  // An order still in creating_order has not started yet.
  started: z.pipe(z.catch(z.nullish(z.int()), 0), z.transform((v) => v ?? 0)),
  connection: z.pipe(
    z.catch(
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
});

/** A port as text: production writes numbers or strings. */
const portText = () => z.pipe(z.union([z.string(), z.number()]), z.transform(String));

/** An order in production's shape (marketplace-live.md): no `status`; `si`, `ct`, `online`, `expired`, `pub_cluster`, `tcp_ports`. */
export const LiveOrderElementSchema = z.looseObject({
  id: z.int(),
  si: z.int(),
  ct: z.catch(z.number(), 0),
  spot: lenient(z.boolean()),
  expired: lenient(z.boolean()),
  online: lenient(z.boolean()),
  currency: z.catch(z.string(), ''),
  price: z.catch(z.number(), 0),
  pub_cluster: z.catch(z.array(z.string()), []),
  tcp_ports: z.catch(z.array(portText()), []),
  http_port: lenient(portText()),
  http_pub: lenient(z.string()),
});

export const WalletSchema = z.looseObject({
  name: z.string(),
  balance: z.number(),
});

// ---------------------------------------------------------------- answers

/** GET /v1/marketplace: elements are read one by one (reader.ts). */
export const MarketplaceResponseSchema = z.extend(EnvelopeSchema, { servers: z.array(z.unknown()) });
/** GET /v1/wallets */
export const WalletsResponseSchema = z.extend(EnvelopeSchema, { wallets: z.array(WalletSchema) });
/** POST /v1/create_order; production answers `{code: 0}` alone (the caller then reconciles through my_orders). */
export const CreateOrderResponseSchema = z.extend(EnvelopeSchema, { order_id: z.optional(z.int()) });
/** GET /v1/my_orders: elements are read one by one (reader.ts). */
export const MyOrdersResponseSchema = z.extend(EnvelopeSchema, { orders: z.array(z.unknown()) });
/** POST /v1/cancel_order: only the result code is specified. */
export const CancelOrderResponseSchema = EnvelopeSchema;
/** POST /v1/set_spot_price: only the result code is specified. */
export const SetSpotPriceResponseSchema = EnvelopeSchema;
/** GET /v1/spot_marketplace: the shape of `market` differs by dialect and nothing reads it yet, so it stays opaque. */
export const SpotMarketResponseSchema = z.extend(EnvelopeSchema, { market: z.unknown() });

// Compile-time check that the parsed wallet satisfies the domain type the port returns.
type Assignable<T, U extends T> = U;
export type _WalletCheck = Assignable<Wallet, z.infer<typeof WalletSchema>>;
