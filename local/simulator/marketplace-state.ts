/**
 * The simulated marketplace's business state and rules, without HTTP: catalogue, wallets, orders,
 * spot prices. Each endpoint method returns the response body, result code included.
 * The rules the spec leaves open are decided here and listed in lambdas/marketplace/README.md.
 */
import * as z from 'zod';
import type { Order, Wallet } from '../../lambdas/domain/marketplace-types';
import { buildCatalogue, DEFAULT_SERVER_COUNT, INITIAL_WALLETS, type SimServer } from './catalogue';

/** One decrease of a spot price per this many ms (marketplace-api.md §8). */
export const SPOT_DECREASE_INTERVAL_MS = 600_000;
/** Largest allowed decrease, as a fraction of the current price (the spec only says "limited step"). */
export const SPOT_MAX_DECREASE_FRACTION = 0.2;

/** Response body: always a result code, plus the endpoint's fields. */
export type SimBody = { code: number; error?: string } & Record<string, unknown>;

/** An order as the simulator keeps it. */
interface OrderRecord {
  readonly order_id: number;
  readonly renting_server: number;
  readonly type: 'on-demand' | 'spot';
  readonly currency: string;
  price: number;
  readonly image: string;
  readonly ports: Readonly<Record<string, string>>;
  readonly env: Readonly<Record<string, string>>;
  readonly createdMs: number;
  readonly readyAtMs: number;
  readonly mrlHours: number;
  endedMs?: number;
  endReason?: 'cancelled' | 'expired';
  lastDecreaseMs?: number;
}

/** An order as control.orders() reports it: the API view plus what the simulator knows. */
export interface SimOrderView extends Order {
  readonly image: string;
  readonly completed: boolean;
  readonly end_reason?: 'cancelled' | 'expired';
}

const ok = (fields: Record<string, unknown> = {}): SimBody => ({ code: 0, ...fields });
const invalid = (): SimBody => ({ code: 2 });
const rejected = (error: string): SimBody => ({ code: 6, error });

const CreateOrderBodySchema = z.looseObject({
  renting_server: z.number().int(),
  type: z.enum(['on-demand', 'spot']),
  currency: z.string().min(1),
  image: z.string().min(1),
  ports: z.record(z.string().regex(/^\d{1,5}$/), z.enum(['tcp', 'http'])).optional(),
  env: z.record(z.string(), z.string()).optional(),
  ssh_password: z.string().regex(/^[A-Za-z0-9]{1,32}$/).optional(),
  spotprice: z.number().positive().optional(),
});
const CancelBodySchema = z.looseObject({ id: z.number().int() });
const SetSpotPriceBodySchema = z.looseObject({ order_id: z.number().int(), desired_price: z.number().positive() });

const clone = <T>(value: T): T => structuredClone(value);
const seconds = (ms: number): number => Math.floor(ms / 1000);

export interface MarketplaceStateOptions {
  readonly seed: number;
  readonly serverCount?: number;
  readonly readyDelayMs: number;
}

export class MarketplaceState {
  private servers: SimServer[] = [];
  private wallets = new Map<string, number>();
  private orders: OrderRecord[] = [];
  private nextOrderId = 50_001;
  public readyDelayMs: number;
  public ordersCreated = 0;

  public constructor(private readonly options: MarketplaceStateOptions) {
    this.readyDelayMs = options.readyDelayMs;
    this.reset();
  }

  public reset(): void {
    this.servers = buildCatalogue(this.options.seed, this.options.serverCount ?? DEFAULT_SERVER_COUNT);
    this.wallets = new Map(Object.entries(INITIAL_WALLETS));
    this.orders = [];
    this.nextOrderId = 50_001;
    this.readyDelayMs = this.options.readyDelayMs;
    this.ordersCreated = 0;
  }

  // ---- endpoints ----------------------------------------------------------------------------

  public marketplace(now: number): SimBody {
    this.sweep(now);
    // `online` and `net` are not in the spec: they exercise the client's tolerance of extra fields.
    return ok({ servers: this.servers.map((s) => ({ ...clone(s), net: { up: 500, down: 1000 } })) });
  }

  public walletList(): SimBody {
    return ok({
      wallets: [...this.wallets].map(([name, balance]) => ({ name, balance, deposit: `sim-deposit-${name}` })),
    });
  }

  public createOrder(body: unknown, now: number): SimBody {
    this.sweep(now);
    const parsed = CreateOrderBodySchema.safeParse(body);
    if (!parsed.success) return invalid();
    const req = parsed.data;
    if (req.type === 'spot' && req.spotprice === undefined) return invalid();
    const server = this.servers.find((s) => s.id === req.renting_server);
    if (!server) return invalid();
    if (!server.online) return rejected('server-offline');
    if (server.rented) return rejected('server-already-rented');
    if (!server.allowed_coins.includes(req.currency)) return rejected('currency-not-allowed');
    let price: number;
    if (req.type === 'spot') {
      const minimum = server.price.spot[req.currency];
      // No spot market in this currency: the request cannot be served as asked.
      if (minimum === undefined) return invalid();
      if ((req.spotprice as number) < minimum) return rejected('too_low_price');
      price = req.spotprice as number;
    } else {
      const listed = server.price.on_demand[req.currency];
      if (listed === undefined) return rejected('currency-not-allowed');
      price = listed;
    }
    // A rental is paid up front for one price unit (a day), which the wallet must cover.
    const balance = this.wallets.get(req.currency) ?? 0;
    if (balance < price) return rejected('not_enough_balance');
    this.wallets.set(req.currency, balance - price);

    const order: OrderRecord = {
      order_id: this.nextOrderId,
      renting_server: server.id,
      type: req.type,
      currency: req.currency,
      price,
      image: req.image,
      ports: req.ports ?? {},
      env: req.env ?? {},
      createdMs: now,
      readyAtMs: now + this.readyDelayMs,
      mrlHours: server.mrl,
    };
    this.nextOrderId += 1;
    this.orders.push(order);
    this.ordersCreated += 1;
    this.patchServer(server.id, { rented: true });
    return ok({ order_id: order.order_id });
  }

  public myOrders(returnCompleted: boolean, now: number): SimBody {
    this.sweep(now);
    const visible = this.orders.filter((o) => returnCompleted || o.endedMs === undefined);
    return ok({ orders: visible.map((o) => this.apiView(o, now)) });
  }

  public cancelOrder(body: unknown, now: number): SimBody {
    this.sweep(now);
    const parsed = CancelBodySchema.safeParse(body);
    if (!parsed.success) return invalid();
    const order = this.orders.find((o) => o.order_id === parsed.data.id);
    if (!order || order.endedMs !== undefined) return invalid();
    this.end(order, now, 'cancelled');
    return ok();
  }

  public setSpotPrice(body: unknown, now: number): SimBody {
    this.sweep(now);
    const parsed = SetSpotPriceBodySchema.safeParse(body);
    if (!parsed.success) return invalid();
    const { order_id, desired_price } = parsed.data;
    const order = this.orders.find((o) => o.order_id === order_id);
    if (!order || order.type !== 'spot' || order.endedMs !== undefined) return invalid();
    const minimum = this.servers.find((s) => s.id === order.renting_server)?.price.spot[order.currency];
    if (minimum !== undefined && desired_price < minimum) return rejected('too_low_price');
    if (desired_price < order.price) {
      if (order.lastDecreaseMs !== undefined && now - order.lastDecreaseMs < SPOT_DECREASE_INTERVAL_MS) return invalid();
      if (desired_price < order.price * (1 - SPOT_MAX_DECREASE_FRACTION)) return rejected('too_low_price');
      order.lastDecreaseMs = now;
    }
    order.price = desired_price;
    return ok();
  }

  public spotMarket(serverParam: string | null, now: number): SimBody {
    this.sweep(now);
    const id = serverParam !== null && /^\d+$/.test(serverParam) ? Number(serverParam) : undefined;
    const server = id === undefined ? undefined : this.servers.find((s) => s.id === id);
    if (!server) return invalid();
    const offers = this.orders
      .filter((o) => o.renting_server === server.id && o.type === 'spot' && o.endedMs === undefined)
      .map((o) => ({ order_id: o.order_id, price: o.price, currency: o.currency }));
    return ok({ market: { offers, server: { id: server.id, min_pricing: clone(server.price.spot), online: server.online } } });
  }

  // ---- control ------------------------------------------------------------------------------

  public allServers(): SimServer[] {
    return clone(this.servers);
  }

  public patchServer(id: number, patch: Partial<SimServer>): void {
    const index = this.servers.findIndex((s) => s.id === id);
    if (index < 0) throw new Error(`no server ${id}`);
    this.servers[index] = { ...(this.servers[index] as SimServer), ...clone(patch), id };
  }

  public addServer(server: Omit<SimServer, 'online'> & { online?: boolean }): void {
    if (this.servers.some((s) => s.id === server.id)) throw new Error(`server ${server.id} exists`);
    this.servers.push({ ...clone(server), online: server.online ?? true });
  }

  public setBalance(currency: string, balance: number): void {
    this.wallets.set(currency, balance);
  }

  public allWallets(): Wallet[] {
    return [...this.wallets].map(([name, balance]) => ({ name, balance }));
  }

  public allOrders(now: number): SimOrderView[] {
    this.sweep(now);
    return this.orders.map((o) => ({
      ...this.apiView(o, now),
      image: o.image,
      completed: o.endedMs !== undefined,
      ...(o.endReason ? { end_reason: o.endReason } : {}),
    }));
  }

  // ---- internals ----------------------------------------------------------------------------

  /** Orders past their server's maximum rental time expire and free the server. */
  private sweep(now: number): void {
    for (const order of this.orders) {
      if (order.endedMs === undefined && now >= order.readyAtMs + order.mrlHours * 3_600_000) this.end(order, now, 'expired');
    }
  }

  private end(order: OrderRecord, now: number, reason: 'cancelled' | 'expired'): void {
    order.endedMs = now;
    order.endReason = reason;
    const stillRented = this.orders.some((o) => o !== order && o.renting_server === order.renting_server && o.endedMs === undefined);
    if (!stillRented && this.servers.some((s) => s.id === order.renting_server)) this.patchServer(order.renting_server, { rented: false });
  }

  private apiView(order: OrderRecord, now: number): Order {
    const ready = now >= order.readyAtMs;
    // Ended orders read `expired` (the spec's only terminal status), whether cancelled or run out.
    const status = order.endedMs !== undefined ? 'expired' : ready ? 'running' : 'creating_order';
    const host = `n${order.renting_server}.servers.sim.invalid`;
    const mapped = (port: string) => 20_000 + ((order.order_id * 7 + Number(port)) % 40_000);
    const connection = ready && order.endedMs === undefined
      ? {
          ssh: `ssh root@${host} -p ${mapped('22')}`,
          jupyter: `http://${host}:${mapped('8888')}`,
          ports: Object.fromEntries(Object.entries(order.ports).map(([port, proto]) => [port, `${proto}://${host}:${mapped(port)}`])),
        }
      : {};
    return {
      order_id: order.order_id,
      renting_server: order.renting_server,
      type: order.type,
      status,
      currency: order.currency,
      price: order.price,
      created: seconds(order.createdMs),
      started: ready ? seconds(order.readyAtMs) : 0,
      connection,
    };
  }
}
