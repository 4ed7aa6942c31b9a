/**
 * The `spec` dialect: the shapes of marketplace-api.md. Every answer is HTTP 200 with the result
 * code in the body (the spec maps no results to HTTP statuses).
 */
import { mappedPort, orderHost, type DialectRenderer } from './dialect';
import type { SimOrder } from './marketplace-state';

/** An order in the spec's shape (marketplace-api.md §3). */
export interface SpecOrder {
  readonly order_id: number;
  readonly renting_server: number;
  readonly type: 'on-demand' | 'spot';
  readonly status: string;
  readonly currency: string;
  readonly price: number;
  readonly created: number;
  readonly started: number;
  readonly connection: {
    readonly ssh?: string;
    readonly jupyter?: string;
    readonly ports?: Readonly<Record<string, string>>;
  };
}

const seconds = (ms: number): number => Math.floor(ms / 1000);

/** An order as the spec's my_orders lists it (also the base of the control's order view). */
export const specOrderView = (order: SimOrder): SpecOrder => {
  const host = orderHost(order);
  const connection =
    order.phase === 'running'
      ? {
          ssh: `ssh root@${host} -p ${mappedPort(order, 22)}`,
          jupyter: `http://${host}:${mappedPort(order, 8888)}`,
          ports: Object.fromEntries(
            Object.entries(order.ports).map(([port, proto]) => [port, `${proto}://${host}:${mappedPort(order, port)}`]),
          ),
        }
      : {};
  return {
    order_id: order.order_id,
    renting_server: order.renting_server,
    type: order.type,
    status: order.phase,
    currency: order.currency,
    price: order.price,
    created: seconds(order.createdMs),
    started: order.startedAtMs !== undefined ? seconds(order.startedAtMs) : 0,
    connection,
  };
};

export const specDialect: DialectRenderer = {
  name: 'spec',
  nativeCoin: 'NATIVE-Blockchain',
  pricePeriodHours: 1,
  fees: { renter: 0, creationUsd: 0 },
  coinOut: (coin) => coin,
  coinIn: (coin) => coin,
  httpStatus: () => 200,
  // `online` and `net` are not in the spec: they exercise the client's tolerance of extra fields.
  marketplace: (servers) => ({ code: 0, servers: servers.map((s) => ({ ...s, net: { up: 500, down: 1000 } })) }),
  wallets: (balances) => ({
    code: 0,
    wallets: balances.map(([name, balance]) => ({ name, balance, deposit: `sim-deposit-${name}` })),
  }),
  createOrder: (order) => ({ code: 0, order_id: order.order_id }),
  myOrders: (orders) => ({ code: 0, orders: orders.map(specOrderView) }),
  done: () => ({ code: 0 }),
  spotMarket: (server, offers) => ({
    code: 0,
    market: {
      offers: offers.map((o) => ({ order_id: o.order_id, price: o.price, currency: o.currency })),
      server: { id: server.id, min_pricing: { ...server.price.spot }, online: server.online },
    },
  }),
  refusal: (refusal) => {
    switch (refusal.kind) {
      case 'invalid':
        return { code: 2 };
      case 'rejected':
        return { code: 6, error: refusal.reason };
      // The spec words a too-big step as too_low_price and a too-early decrease as invalid input.
      case 'step-too-big':
        return { code: 6, error: 'too_low_price' };
      // The spec states no raise limit; a simulator with one set answers as production does (marketplace-live.md).
      case 'raise-too-big':
        return { code: 6, error: 'exceeded_max_step', max_step: refusal.maxStep };
      case 'decrease-too-soon':
        return { code: 2 };
    }
  },
};
