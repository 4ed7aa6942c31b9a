/**
 * Domain view of the marketplace API. The marketplace answers in two dialects (the spec's shapes in
 * marketplace-api.md and production's in marketplace-live.md); the reader in lambdas/marketplace/
 * turns both into these types, so nothing past it knows dialects exist.
 */
import type * as z from 'zod/mini';
import type { PortProtocolSchema } from '../../contract/shapes';

export type Currency = 'bitcoin' | 'NATIVE-Blockchain' | 'USD-Blockchain' | (string & {});
export type OrderType = 'on-demand' | 'spot';
export type PortProtocol = z.infer<typeof PortProtocolSchema>;

/**
 * USD prices of a server, **per hour** whatever period the marketplace states them in: the reader
 * (lambdas/marketplace/reader.ts) converts them, once. Every USD figure the relay compares or
 * reports (`max_price`, `target_price`, `price_usd`, `min_price`, chat texts) is one of these.
 */
export interface UsdPerHour {
  /** USD per hour of an on-demand order, by the currency it is paid in. */
  readonly on_demand: Readonly<Record<string, number>>;
  /** USD per hour at the spot price; absent when the server has no spot price. */
  readonly spot?: number;
}

/**
 * A server's prices. The crypto maps are in the marketplace's own unit (the currency per the
 * marketplace's period, per day in production), as bids and `set_spot_price` are sent; the USD
 * prices are per hour.
 */
export interface ServerPrice {
  /** Crypto prices by currency, marketplace unit; a currency without a price is absent. */
  readonly on_demand: Readonly<Record<string, number>>;
  /** Spot prices by currency, marketplace unit; only positive prices (a server without a spot market has `{}`). */
  readonly spot: Readonly<Record<string, number>>;
  readonly usd_per_hour: UsdPerHour;
}

export interface Server {
  readonly id: number;
  readonly owner: number;
  readonly mrl: number;
  readonly rented: boolean;
  readonly price: ServerPrice;
  readonly specs: { readonly gpu: string; readonly cpu: string; readonly ram: number; readonly disk: string };
  /** One trimmed name per GPU card (from `gpu_array`, else `specs.gpu`); never empty (an element without GPUs is skipped). */
  readonly gpu_array: readonly string[];
  readonly reliability: number;
  readonly rating: { readonly avg: number; readonly cnt: number };
  readonly allowed_coins: readonly string[];
}

export type OrderStatus = 'pending' | 'running' | 'paused' | 'expired' | 'creating_order' | (string & {});

/**
 * An order. `status` is the spec's vocabulary in both dialects: `running` means ready (reachable
 * over ssh), `creating_order` not yet, `expired` ended.
 */
export interface Order {
  readonly order_id: number;
  readonly renting_server: number;
  readonly type: OrderType | (string & {});
  readonly status: OrderStatus;
  readonly currency: string;
  readonly price: number;
  readonly created: number;
  readonly started: number;
  /** Hours the marketplace has billed so far (production's `spend` over its per-day `price`); absent when it does not say. */
  readonly billed_hours?: number;
  /** What the order has cost so far in its coin, the renter fee included (production's `spend`); absent when not said. */
  readonly spend?: number;
  /** The fee for placing the order, USD (production's `creation_fee`); absent when not said. */
  readonly creation_fee?: number;
  readonly connection: {
    readonly ssh?: string;
    readonly jupyter?: string;
    readonly ports?: Readonly<Record<string, string>>;
  };
}

export interface Wallet {
  readonly name: string;
  readonly balance: number;
}

export interface CreateOrderRequest {
  readonly renting_server: number;
  readonly type: OrderType;
  readonly currency: string;
  readonly image: string;
  readonly ports?: Readonly<Record<string, PortProtocol>>;
  readonly env?: Readonly<Record<string, string>>;
  readonly ssh_password?: string;
  /** Required when type is spot. */
  readonly spotprice?: number;
  /** One OpenSSH public key line installed for root (issue 37; production's field, marketplace-live.md S13). */
  readonly ssh_key?: string;
  /** true with `ssh_key`: the container's entrypoint starts sshd for key logins (S13, S10). */
  readonly autossh_entrypoint?: boolean;
  /** The token Jupyter asks for. */
  readonly jupyter_token?: string;
  /** A start-up script the container runs. */
  readonly command?: string;
}

/** The error strings that come with result code 6: the spec's five and production's two spot-price ones. */
export const REJECTION_REASONS = [
  'not_enough_balance',
  'server-already-rented',
  'too_low_price',
  'server-offline',
  'currency-not-allowed',
  'exceeded_max_step',
  'can_lower_every_600_seconds',
] as const;
export type RejectionReason = (typeof REJECTION_REASONS)[number];
