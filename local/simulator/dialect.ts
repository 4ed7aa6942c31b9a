/**
 * The simulator's dialects: how the same marketplace state is worded on the wire. `spec` answers in
 * the shapes of marketplace-api.md; `live` answers as the production marketplace does
 * (spec/marketplace-live.md and the samples in spec/live-v1/). A dialect only renders: coin names,
 * body shapes and HTTP statuses. The rules live in marketplace-state.ts.
 */
import type { SimServer } from './catalogue';
import type { Refusal, SimBody, SimOrder } from './marketplace-state';

export const DIALECTS = ['spec', 'live'] as const;
export type Dialect = (typeof DIALECTS)[number];

/** The spec's name of the marketplace's own coin, which the state uses. */
export const SPEC_NATIVE_COIN = 'NATIVE-Blockchain';

/**
 * Reads a dialect name (e.g. MARKETPLACE_DIALECT). Unset or empty means `spec`; anything other than
 * `spec` or `live` is an error naming the variable.
 */
export const parseDialect = (value: string | undefined, source = 'MARKETPLACE_DIALECT'): Dialect => {
  if (value === undefined || value.trim() === '') return 'spec';
  const trimmed = value.trim();
  if ((DIALECTS as readonly string[]).includes(trimmed)) return trimmed as Dialect;
  throw new Error(`${source} must be one of ${DIALECTS.join(', ')}; got "${value}"`);
};

/** Everything a dialect decides about an answer. */
export interface DialectRenderer {
  readonly name: Dialect;
  /** This dialect's name of the marketplace's own coin. */
  readonly nativeCoin: string;
  /** Hours of one price unit: the spec prices per hour, production per day. */
  readonly pricePeriodHours: number;
  /** What the marketplace charges on top of the price (a fraction) and per order placed (USD): the spec none, production 5 % and $0.10. */
  readonly fees: { readonly renter: number; readonly creationUsd: number };
  /** State (spec) coin name → this dialect's. */
  coinOut(coin: string): string;
  /** This dialect's coin name → the state's. A coin the dialect does not know stays unknown. */
  coinIn(coin: string): string;
  /** HTTP status of an answer carrying this result code. */
  httpStatus(code: number): number;
  marketplace(servers: readonly SimServer[]): SimBody;
  wallets(balances: readonly (readonly [string, number])[]): SimBody;
  createOrder(order: SimOrder): SimBody;
  myOrders(orders: readonly SimOrder[], serverOf: (id: number) => SimServer | undefined, now: number): SimBody;
  /** Success of cancel_order and set_spot_price. */
  done(): SimBody;
  spotMarket(server: SimServer, offers: readonly SimOrder[]): SimBody;
  refusal(refusal: Refusal): SimBody;
}

/**
 * Where an order's machine answers: the same host and port mapping in every dialect. With its ssh
 * endpoint open (ssh-endpoints.ts) that is 127.0.0.1 and the endpoint's port for 22.
 */
export const orderHost = (order: SimOrder): string => order.ssh?.host ?? `n${order.renting_server}.servers.sim.invalid`;
export const mappedPort = (order: SimOrder, port: string | number): number =>
  order.ssh && String(port) === '22' ? order.ssh.port : 20_000 + ((order.order_id * 7 + Number(port)) % 40_000);

const renameKeys = (map: Readonly<Record<string, number>>, rename: (coin: string) => string): Record<string, number> =>
  Object.fromEntries(Object.entries(map).map(([coin, value]) => [rename(coin), value]));

/** A server (or a patch of one) with its coin names renamed: allowed_coins and the crypto price maps. */
export const renameServerCoins = <T extends Partial<SimServer>>(server: T, rename: (coin: string) => string): T => {
  const out: Record<string, unknown> = { ...server };
  if (Array.isArray(server.allowed_coins)) out.allowed_coins = server.allowed_coins.map(rename);
  if (server.price && typeof server.price === 'object') {
    const price: Record<string, unknown> = { ...server.price };
    if (server.price.on_demand) price.on_demand = renameKeys(server.price.on_demand, rename);
    if (server.price.spot) price.spot = renameKeys(server.price.spot, rename);
    out.price = price;
  }
  return out as T;
};
