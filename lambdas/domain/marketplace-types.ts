/** Domain view of the marketplace API (see ../shared/spec/marketplace-api.md). */

export type Currency = 'bitcoin' | 'NATIVE-Blockchain' | 'USD-Blockchain' | (string & {});
export type OrderType = 'on-demand' | 'spot';
export type PortProtocol = 'tcp' | 'http';

export interface ServerPrice {
  readonly on_demand: Readonly<Record<string, number>>;
  readonly spot: Readonly<Record<string, number>>;
  readonly usd: { readonly on_demand_native?: number; readonly spot?: number };
}

export interface Server {
  readonly id: number;
  readonly owner: number;
  readonly mrl: number;
  readonly rented: boolean;
  readonly price: ServerPrice;
  readonly specs: { readonly gpu: string; readonly cpu: string; readonly ram: number; readonly disk: string };
  readonly gpu_array: readonly string[];
  readonly reliability: number;
  readonly rating: { readonly avg: number; readonly cnt: number };
  readonly allowed_coins: readonly string[];
}

export type OrderStatus = 'pending' | 'running' | 'paused' | 'expired' | 'creating_order' | (string & {});

export interface Order {
  readonly order_id: number;
  readonly renting_server: number;
  readonly type: OrderType | (string & {});
  readonly status: OrderStatus;
  readonly currency: string;
  readonly price: number;
  readonly created: number;
  readonly started: number;
  readonly connection: { readonly ssh?: string; readonly jupyter?: string; readonly ports?: Readonly<Record<string, string>> };
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
}

/** The five error strings that come with result code 6. */
export const REJECTION_REASONS = [
  'not_enough_balance',
  'server-already-rented',
  'too_low_price',
  'server-offline',
  'currency-not-allowed',
] as const;
export type RejectionReason = (typeof REJECTION_REASONS)[number];
