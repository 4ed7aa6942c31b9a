/**
 * Zod schemas of the marketplace's answers, in both dialects: the spec's (marketplace-api.md) and
 * production's (marketplace-live.md). Envelopes are checked strictly; list elements are read one by
 * one by `reader.ts`, so one element the reader cannot use never sinks a whole answer.
 *
 * Objects are loose: fields nobody lists pass through untouched, so an API that grows a field does
 * not break us.
 */
import * as z from 'zod';
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

const OptionalNumber = z.number().optional().catch(undefined);

/**
 * The envelope every response shares: the result code and, with code 6, the `error` string plus
 * the numbers production sends with some reasons (`min_price`, `max_step`, `time_to_lowering`).
 */
export const EnvelopeSchema = z.looseObject({
  code: z.number().int(),
  error: z.string().optional().catch(undefined),
  min_price: OptionalNumber,
  max_step: OptionalNumber,
  time_to_lowering: OptionalNumber,
});
export type Envelope = z.infer<typeof EnvelopeSchema>;

// ---------------------------------------------------------------- list elements (read by reader.ts)

/** A price map keyed by currency: only finite numbers above `min` are kept; anything else is "no price there". */
const priceMap = (keep: (price: number) => boolean) =>
  z
    .record(z.string(), z.unknown())
    .catch({})
    .optional()
    .transform((map) =>
      Object.fromEntries(
        Object.entries(map ?? {}).filter((e): e is [string, number] => typeof e[1] === 'number' && Number.isFinite(e[1]) && keep(e[1])),
      ),
    );

/** `price.usd` as either dialect writes it: `on_demand_<coin slug>` keys and `spot` (0 = none in production). */
const UsdPricesSchema = z.record(z.string(), z.unknown()).catch({}).optional();

/**
 * A listing element. Only `id` and a non-empty `gpu_array` are needed to use it; every other field
 * falls back to the value that keeps the relay safe (a server whose `rented` cannot be read counts
 * as rented, one without `allowed_coins` accepts no order).
 */
export const ServerElementSchema = z.looseObject({
  id: z.number().int(),
  gpu_array: z
    .array(z.string())
    .transform((names) => names.map((n) => n.trim()).filter((n) => n.length > 0))
    .pipe(z.array(z.string()).min(1, 'no GPU names')),
  owner: z.number().int().catch(0),
  mrl: z.number().nonnegative().catch(0),
  rented: z.boolean().catch(true),
  price: z
    .looseObject({
      on_demand: priceMap((p) => p >= 0),
      // A spot price of 0 is production's "no spot price": it cannot be bid on.
      spot: priceMap((p) => p > 0),
      usd: UsdPricesSchema,
    })
    .catch({ on_demand: {}, spot: {}, usd: {} }),
  specs: z
    .looseObject({
      gpu: z.string().catch(''),
      cpu: z.string().catch(''),
      ram: z.number().catch(0),
      disk: z.string().catch(''),
    })
    .catch({ gpu: '', cpu: '', ram: 0, disk: '' }),
  reliability: z.number().min(0).max(1).catch(0),
  rating: z.looseObject({ avg: z.number().catch(0), cnt: z.number().int().catch(0) }).catch({ avg: 0, cnt: 0 }),
  allowed_coins: z.array(z.string()).catch([]),
});

/** An order in the spec's shape (marketplace-api.md §2.2). */
export const SpecOrderElementSchema = z.looseObject({
  order_id: z.number().int(),
  renting_server: z.number().int(),
  status: z.string(),
  created: z.number().int(),
  type: z.string().catch('on-demand'),
  currency: z.string().catch(''),
  price: z.number().catch(0),
  // An order still in creating_order has not started yet.
  started: z.number().int().nullish().catch(0).transform((v) => v ?? 0),
  connection: z
    .looseObject({
      ssh: z.string().optional().catch(undefined),
      jupyter: z.string().optional().catch(undefined),
      ports: z.record(z.string(), z.string()).optional().catch(undefined),
    })
    .nullish()
    .catch({})
    .transform((v) => v ?? {}),
});

/** An order in production's shape (marketplace-live.md): no `status`; `si`, `ct`, `online`, `expired`, `pub_cluster`, `tcp_ports`. */
export const LiveOrderElementSchema = z.looseObject({
  id: z.number().int(),
  si: z.number().int(),
  ct: z.number().catch(0),
  spot: z.boolean().optional().catch(undefined),
  expired: z.boolean().optional().catch(undefined),
  online: z.boolean().optional().catch(undefined),
  currency: z.string().catch(''),
  price: z.number().catch(0),
  pub_cluster: z.array(z.string()).catch([]),
  tcp_ports: z.array(z.union([z.string(), z.number()]).transform(String)).catch([]),
  http_port: z.union([z.string(), z.number()]).transform(String).optional().catch(undefined),
  http_pub: z.string().optional().catch(undefined),
});

export const WalletSchema = z.looseObject({
  name: z.string(),
  balance: z.number(),
});

// ---------------------------------------------------------------- answers

/** GET /v1/marketplace: elements are read one by one (reader.ts). */
export const MarketplaceResponseSchema = EnvelopeSchema.extend({ servers: z.array(z.unknown()) });
/** GET /v1/wallets */
export const WalletsResponseSchema = EnvelopeSchema.extend({ wallets: z.array(WalletSchema) });
/** POST /v1/create_order; production answers `{code: 0}` alone (the caller then reconciles through my_orders). */
export const CreateOrderResponseSchema = EnvelopeSchema.extend({ order_id: z.number().int().optional() });
/** GET /v1/my_orders: elements are read one by one (reader.ts). */
export const MyOrdersResponseSchema = EnvelopeSchema.extend({ orders: z.array(z.unknown()) });
/** POST /v1/cancel_order: only the result code is specified. */
export const CancelOrderResponseSchema = EnvelopeSchema;
/** POST /v1/set_spot_price: only the result code is specified. */
export const SetSpotPriceResponseSchema = EnvelopeSchema;
/** GET /v1/spot_marketplace: the shape of `market` differs by dialect and nothing reads it yet, so it stays opaque. */
export const SpotMarketResponseSchema = EnvelopeSchema.extend({ market: z.unknown() });

// Compile-time check that the parsed wallet satisfies the domain type the port returns.
type Assignable<T, U extends T> = U;
export type _WalletCheck = Assignable<Wallet, z.infer<typeof WalletSchema>>;
