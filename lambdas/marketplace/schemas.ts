/**
 * Zod schemas of every marketplace response (marketplace-api.md §2, §4, §7).
 *
 * Objects are loose: fields the spec does not list pass through untouched, so an API that grows a
 * field does not break us. Fields the spec lists are checked strictly for type. Two tolerances,
 * both documented in README.md: a `null` price value counts as "no price in that currency", and a
 * missing `started` (an order still being set up) reads as 0.
 */
import * as z from 'zod';
import type { Order, Server, Wallet } from '../domain/marketplace-types';

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

/** The envelope every response shares: the result code and, with code 6, the `error` string. */
export const EnvelopeSchema = z.looseObject({
  code: z.number().int(),
  error: z.string().optional(),
});

/** A price map keyed by currency; `null` values (no price in that currency) are dropped. */
const PriceMapSchema = z
  .record(z.string(), z.number().nonnegative().nullable())
  .transform((map) => Object.fromEntries(Object.entries(map).filter((e): e is [string, number] => e[1] !== null)));

const OptionalPrice = z
  .number()
  .nonnegative()
  .nullish()
  .transform((v) => v ?? undefined);

export const ServerPriceSchema = z.looseObject({
  on_demand: PriceMapSchema,
  // A server without a spot market may omit the map entirely.
  spot: PriceMapSchema.optional().transform((v) => v ?? {}),
  usd: z.looseObject({ on_demand_native: OptionalPrice, spot: OptionalPrice }),
});

export const ServerSchema = z.looseObject({
  id: z.number().int(),
  owner: z.number().int(),
  mrl: z.number(),
  rented: z.boolean(),
  price: ServerPriceSchema,
  specs: z.looseObject({ gpu: z.string(), cpu: z.string(), ram: z.number(), disk: z.string() }),
  gpu_array: z.array(z.string()),
  reliability: z.number().min(0).max(1),
  rating: z.looseObject({ avg: z.number(), cnt: z.number().int() }),
  allowed_coins: z.array(z.string()),
});

export const WalletSchema = z.looseObject({
  name: z.string(),
  balance: z.number(),
});

export const OrderSchema = z.looseObject({
  order_id: z.number().int(),
  renting_server: z.number().int(),
  type: z.string(),
  status: z.string(),
  currency: z.string(),
  price: z.number(),
  created: z.number().int(),
  // An order still in creating_order has not started yet.
  started: z.number().int().nullish().transform((v) => v ?? 0),
  connection: z
    .looseObject({
      ssh: z.string().optional(),
      jupyter: z.string().optional(),
      ports: z.record(z.string(), z.string()).optional(),
    })
    .nullish()
    .transform((v) => v ?? {}),
});

/** GET /v1/marketplace */
export const MarketplaceResponseSchema = EnvelopeSchema.extend({ servers: z.array(ServerSchema) });
/** GET /v1/wallets */
export const WalletsResponseSchema = EnvelopeSchema.extend({ wallets: z.array(WalletSchema) });
/** POST /v1/create_order; `order_id` may be absent (the caller then reconciles through my_orders). */
export const CreateOrderResponseSchema = EnvelopeSchema.extend({ order_id: z.number().int().optional() });
/** GET /v1/my_orders */
export const MyOrdersResponseSchema = EnvelopeSchema.extend({ orders: z.array(OrderSchema) });
/** POST /v1/cancel_order: only the result code is specified. */
export const CancelOrderResponseSchema = EnvelopeSchema;
/** POST /v1/set_spot_price: only the result code is specified. */
export const SetSpotPriceResponseSchema = EnvelopeSchema;
/** GET /v1/spot_marketplace: the shape of `market` entries is not specified, so it stays opaque. */
export const SpotMarketResponseSchema = EnvelopeSchema.extend({ market: z.unknown() });

// Compile-time checks that the parsed shapes satisfy the domain types the port returns.
type Assignable<T, U extends T> = U;
export type _ServerCheck = Assignable<Server, z.infer<typeof ServerSchema>>;
export type _OrderCheck = Assignable<Order, z.infer<typeof OrderSchema>>;
export type _WalletCheck = Assignable<Wallet, z.infer<typeof WalletSchema>>;
