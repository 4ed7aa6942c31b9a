/**
 * The simulated marketplace's business state and rules, without HTTP and without answer shapes:
 * catalogue, wallets, orders, spot prices. Each endpoint method returns either its result (plain
 * records) or a Refusal; a dialect (dialect.ts) turns both into response bodies. Coin names here
 * are the spec's (`NATIVE-Blockchain`); the live dialect translates at the edge.
 * The rules the spec leaves open are decided here and listed in lambdas/marketplace/README.md.
 */
import * as z from 'zod';
import { buildCatalogue, DEFAULT_SERVER_COUNT, INITIAL_WALLETS, type SimServer } from './catalogue';
import { documentedExampleServers } from './docs-servers';
import { parseSshPublicKeyLine } from './ssh-public-key';

/** One decrease of a spot price per this many ms (marketplace-api.md §8). */
export const SPOT_DECREASE_INTERVAL_MS = 600_000;
/** Largest allowed decrease, as a fraction of the current price (the spec only says "limited step"). */
export const SPOT_MAX_DECREASE_FRACTION = 0.2;

/** Response body: always a result code, plus the endpoint's fields. */
export type SimBody = { code: number; error?: string } & Record<string, unknown>;

/** The spec's error strings of result code 6 (marketplace-api.md). */
export type RejectionReason =
  'not_enough_balance' | 'server-already-rented' | 'too_low_price' | 'server-offline' | 'currency-not-allowed';

/** Why a request was not carried out, in the simulator's words; each dialect words it its own way. */
export type Refusal =
  /** Invalid input or an unknown/unsuitable object (code 2). */
  | { readonly kind: 'invalid' }
  /** Code 6 with one of the spec's reasons; `minPrice` for too_low_price against a server minimum. */
  | { readonly kind: 'rejected'; readonly reason: RejectionReason; readonly minPrice?: number }
  /** A spot price decrease bigger than the allowed step (`maxStep`, in the order's currency). */
  | { readonly kind: 'step-too-big'; readonly maxStep: number }
  /** A spot price raise bigger than the allowed step (only with a raise step set: `raiseStepFraction`). */
  | { readonly kind: 'raise-too-big'; readonly maxStep: number }
  /** A second spot price decrease sooner than SPOT_DECREASE_INTERVAL_MS after the last one. */
  | { readonly kind: 'decrease-too-soon'; readonly waitMs: number };

export type Outcome<T> = { readonly ok: T } | { readonly refused: Refusal };

/** What an order is doing. Without a control override it follows the clock. */
export type OrderPhase = 'pending' | 'creating_order' | 'running' | 'paused' | 'expired';
export const ORDER_PHASES = ['pending', 'creating_order', 'running', 'paused', 'expired'] as const;

/** An order as the simulator keeps it. */
interface OrderRecord {
  readonly order_id: number;
  readonly renting_server: number;
  readonly type: 'on-demand' | 'spot';
  readonly currency: string;
  price: number;
  /** Every price the order had and from when (ms): what it is charged (`spend`) counts per step. */
  readonly priceSteps: { readonly fromMs: number; readonly price: number }[];
  readonly image: string;
  readonly ports: Readonly<Record<string, 'tcp' | 'http'>>;
  readonly env: Readonly<Record<string, string>>;
  /** The password its ssh server accepts (issue 31 §4); never shown in my_orders. */
  readonly ssh_password?: string;
  /** The public key line its ssh server accepts (issue 37 §7); never shown in my_orders. */
  readonly ssh_key?: string;
  /** Its Jupyter token; never shown in my_orders. */
  readonly jupyter_token?: string;
  /** Its start-up script (recorded, never run); never shown in my_orders. */
  readonly command?: string;
  /** As sent: `true`/`false`, or the string one client sends (marketplace-live.md, fourth round). */
  readonly autossh_entrypoint?: boolean | 'ssh_autoinstall';
  readonly createdMs: number;
  /** Before this the order exists (the server is rented) but my_orders does not list it yet. */
  readonly visibleAtMs: number;
  readonly readyAtMs: number;
  readonly mrlHours: number;
  endedMs?: number;
  endReason?: 'cancelled' | 'expired';
  lastDecreaseMs?: number;
  /** Set through the control: the phase shown instead of the clock's. */
  forcedPhase?: Exclude<OrderPhase, 'expired'>;
  /** When the order went running through the control before its ready time. */
  startedMs?: number;
  /** Where its ssh answers (the simulator's listener for it), once opened. */
  ssh?: { readonly host: string; readonly port: number };
  /** Set through the control (`POST /_sim/outbid`): another renter's bid that holds the server; the order is paused until it bids more. */
  outbidBy?: number;
}

/** One set_spot_price call as the simulator saw it (`GET /_sim/spot-price-calls`). */
export interface SpotPriceCall {
  readonly order_id: number;
  readonly desired_price: number;
  /** The order's price before the call. */
  readonly previous_price?: number;
  /** Business clock, ms. */
  readonly at: number;
  /** `ok`, or the refusal kind. */
  readonly outcome: 'ok' | Refusal['kind'];
  /** The step a `raise-too-big` / `step-too-big` refusal stated. */
  readonly max_step?: number;
}

/**
 * The price units an order was charged up to `now`: each price step × the time it ran at that price
 * (readiness to its end), over the dialect's price period (`periodMs`). Fees are the dialect's to add.
 */
export const chargedUnits = (
  order: Pick<SimOrder, 'priceSteps' | 'startedAtMs' | 'endedMs'>,
  now: number,
  periodMs: number,
): number => {
  if (order.startedAtMs === undefined) return 0;
  const start = order.startedAtMs;
  const end = order.endedMs ?? now;
  let units = 0;
  for (const [i, step] of order.priceSteps.entries()) {
    const from = Math.max(start, step.fromMs);
    const to = Math.min(end, order.priceSteps[i + 1]?.fromMs ?? Infinity);
    if (to > from) units += (step.price * (to - from)) / periodMs;
  }
  return units;
};

/** A snapshot of an order with its phase at the time asked. */
export interface SimOrder extends Readonly<Omit<OrderRecord, 'forcedPhase'>> {
  readonly phase: OrderPhase;
  /** When it went running (ms), if it has. */
  readonly startedAtMs?: number;
}

/** A status change requested through the control (`POST /_sim/orders/:id`). */
export const OrderPatchSchema = z.strictObject({
  status: z.enum(ORDER_PHASES).optional(),
  online: z.boolean().optional(),
  expired: z.boolean().optional(),
});
export type OrderPatch = z.infer<typeof OrderPatchSchema>;

const refuse = (refusal: Refusal): { refused: Refusal } => ({ refused: refusal });
const invalid = () => refuse({ kind: 'invalid' });
const rejected = (reason: RejectionReason, minPrice?: number) =>
  refuse(minPrice === undefined ? { kind: 'rejected', reason } : { kind: 'rejected', reason, minPrice });

/** Longest start-up `command` taken, in UTF-8 bytes (production publishes none; the relay sends at most this). */
export const SIM_MAX_COMMAND_BYTES = 16_384;
/** Longest `ssh_key` line taken (a client's cap, marketplace-live.md S14; production publishes none). */
export const SIM_MAX_SSH_KEY_CHARS = 3_072;
/** The spec's rule for ssh_password, which the simulator applies to jupyter_token too (S14's caps). */
const ALPHANUMERIC_32 = /^[A-Za-z0-9]{1,32}$/;

const CreateOrderBodySchema = z.looseObject({
  renting_server: z.number().int(),
  type: z.enum(['on-demand', 'spot']),
  currency: z.string().min(1),
  image: z.string().min(1),
  ports: z.record(z.string().regex(/^\d{1,5}$/), z.enum(['tcp', 'http'])).optional(),
  env: z.record(z.string(), z.string()).optional(),
  ssh_password: z.string().regex(ALPHANUMERIC_32).optional(),
  ssh_key: z
    .string()
    .max(SIM_MAX_SSH_KEY_CHARS)
    .refine((line) => parseSshPublicKeyLine(line) !== undefined)
    .optional(),
  jupyter_token: z.string().regex(ALPHANUMERIC_32).optional(),
  command: z
    .string()
    .refine((script) => Buffer.byteLength(script, 'utf8') <= SIM_MAX_COMMAND_BYTES)
    .optional(),
  autossh_entrypoint: z.union([z.boolean(), z.literal('ssh_autoinstall')]).optional(),
  spotprice: z.number().positive().optional(),
});
export type CreateOrderBody = z.infer<typeof CreateOrderBodySchema>;
const CancelBodySchema = z.looseObject({ id: z.number().int() });
const SetSpotPriceBodySchema = z.looseObject({ order_id: z.number().int(), desired_price: z.number().positive() });

const clone = <T>(value: T): T => structuredClone(value);

export interface MarketplaceStateOptions {
  readonly seed: number;
  readonly serverCount?: number;
  /** List the servers the documented examples rent (./docs-servers.ts) after the seeded ones. @default false */
  readonly docsServers?: boolean;
  readonly readyDelayMs: number;
  /** Called once when an order ends (cancelled or expired), e.g. to close its ssh endpoint. */
  readonly onOrderEnded?: (orderId: number) => void;
  /** A new order shows in my_orders (and spot_marketplace offers) only this long after creation. @default 0 */
  readonly visibleDelayMs?: number;
}

export class MarketplaceState {
  private servers: SimServer[] = [];
  private wallets = new Map<string, number>();
  private orders: OrderRecord[] = [];
  private nextOrderId = 50_001;
  public readyDelayMs: number;
  /** Production lists a new order in my_orders up to ~20 s late (marketplace-live.md, S6). */
  public visibleDelayMs: number;
  public ordersCreated = 0;
  /**
   * Largest allowed raise of a spot price, as a fraction of the current price; undefined = any raise
   * (the spec states no limit on raises; production answers `exceeded_max_step` with the step).
   */
  public raiseStepFraction: number | undefined;
  /** Every set_spot_price call since the last reset. */
  public spotPriceCalls: SpotPriceCall[] = [];

  public constructor(private readonly options: MarketplaceStateOptions) {
    this.readyDelayMs = options.readyDelayMs;
    this.visibleDelayMs = options.visibleDelayMs ?? 0;
    this.reset();
  }

  public reset(): void {
    this.servers = [
      ...buildCatalogue(this.options.seed, this.options.serverCount ?? DEFAULT_SERVER_COUNT),
      ...(this.options.docsServers ? documentedExampleServers() : []),
    ];
    this.wallets = new Map(Object.entries(INITIAL_WALLETS));
    this.orders = [];
    // Order ids go on across resets, as a marketplace's do: a relay that outlives a reset (the tests'
    // shared table) must never see one id name two orders (the order owner claims are keyed by it).
    this.readyDelayMs = this.options.readyDelayMs;
    this.visibleDelayMs = this.options.visibleDelayMs ?? 0;
    this.ordersCreated = 0;
    this.raiseStepFraction = undefined;
    this.spotPriceCalls = [];
  }

  // ---- endpoints ----------------------------------------------------------------------------

  public marketplace(now: number): SimServer[] {
    this.sweep(now);
    return clone(this.servers);
  }

  public walletList(): [string, number][] {
    return [...this.wallets];
  }

  /** Validates the parsed JSON body of create_order (the dialect may translate coin names first). */
  public static parseCreateOrder(body: unknown): CreateOrderBody | undefined {
    const parsed = CreateOrderBodySchema.safeParse(body);
    return parsed.success ? parsed.data : undefined;
  }

  public createOrder(body: unknown, now: number): Outcome<SimOrder> {
    this.sweep(now);
    const req = MarketplaceState.parseCreateOrder(body);
    if (!req) return invalid();
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
      if ((req.spotprice as number) < minimum) return rejected('too_low_price', minimum);
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
      priceSteps: [{ fromMs: now, price }],
      image: req.image,
      ports: req.ports ?? {},
      env: req.env ?? {},
      ...(req.ssh_password !== undefined ? { ssh_password: req.ssh_password } : {}),
      ...(req.ssh_key !== undefined ? { ssh_key: req.ssh_key } : {}),
      ...(req.jupyter_token !== undefined ? { jupyter_token: req.jupyter_token } : {}),
      ...(req.command !== undefined ? { command: req.command } : {}),
      ...(req.autossh_entrypoint !== undefined ? { autossh_entrypoint: req.autossh_entrypoint } : {}),
      createdMs: now,
      visibleAtMs: now + this.visibleDelayMs,
      readyAtMs: now + this.readyDelayMs,
      mrlHours: server.mrl,
    };
    this.nextOrderId += 1;
    this.orders.push(order);
    this.ordersCreated += 1;
    this.patchServer(server.id, { rented: true });
    return { ok: this.snapshot(order, now) };
  }

  /** Active orders, or every order with `returnCompleted`. */
  public myOrders(returnCompleted: boolean, now: number): SimOrder[] {
    this.sweep(now);
    return this.orders
      .filter((o) => now >= o.visibleAtMs && (returnCompleted || o.endedMs === undefined))
      .map((o) => this.snapshot(o, now));
  }

  public cancelOrder(body: unknown, now: number): Outcome<true> {
    this.sweep(now);
    const parsed = CancelBodySchema.safeParse(body);
    if (!parsed.success) return invalid();
    const order = this.orders.find((o) => o.order_id === parsed.data.id);
    if (!order || order.endedMs !== undefined) return invalid();
    this.end(order, now, 'cancelled');
    return { ok: true };
  }

  public setSpotPrice(body: unknown, now: number): Outcome<true> {
    this.sweep(now);
    const parsed = SetSpotPriceBodySchema.safeParse(body);
    if (!parsed.success) return invalid();
    const { order_id, desired_price } = parsed.data;
    const order = this.orders.find((o) => o.order_id === order_id);
    const before = order?.price;
    const outcome = this.applySpotPrice(order, desired_price, now);
    const refusal = 'refused' in outcome ? outcome.refused : undefined;
    this.spotPriceCalls.push({
      order_id,
      desired_price,
      at: now,
      outcome: refusal?.kind ?? 'ok',
      ...(before !== undefined ? { previous_price: before } : {}),
      ...(refusal && 'maxStep' in refusal ? { max_step: refusal.maxStep } : {}),
    });
    return outcome;
  }

  private applySpotPrice(order: OrderRecord | undefined, desired_price: number, now: number): Outcome<true> {
    if (!order || order.type !== 'spot' || order.endedMs !== undefined) return invalid();
    const minimum = this.servers.find((s) => s.id === order.renting_server)?.price.spot[order.currency];
    if (minimum !== undefined && desired_price < minimum) return rejected('too_low_price', minimum);
    if (desired_price < order.price) {
      const since = order.lastDecreaseMs === undefined ? Infinity : now - order.lastDecreaseMs;
      if (since < SPOT_DECREASE_INTERVAL_MS)
        return refuse({ kind: 'decrease-too-soon', waitMs: SPOT_DECREASE_INTERVAL_MS - since });
      const maxStep = order.price * SPOT_MAX_DECREASE_FRACTION;
      if (order.price - desired_price > maxStep) return refuse({ kind: 'step-too-big', maxStep });
      order.lastDecreaseMs = now;
    }
    if (desired_price > order.price && this.raiseStepFraction !== undefined) {
      const maxStep = order.price * this.raiseStepFraction;
      if (desired_price - order.price > maxStep * (1 + 1e-9)) return refuse({ kind: 'raise-too-big', maxStep });
    }
    order.price = desired_price;
    order.priceSteps.push({ fromMs: now, price: desired_price });
    // Outbid: a bid above the other renter's takes the server back, and the order runs again.
    if (order.outbidBy !== undefined && desired_price > order.outbidBy) {
      order.outbidBy = undefined;
      order.forcedPhase = 'running';
    }
    return { ok: true };
  }

  /**
   * Another renter outbids a spot order (`POST /_sim/outbid`): it bids `price` on the order's server,
   * the order pauses (spec: status `paused`; live: `online: false`) and the server stays rented by
   * that renter, also after the order ends, until the order bids more than `price` (set_spot_price).
   */
  public outbid(orderId: number, price: number, now: number): SimOrder {
    this.sweep(now);
    const order = this.orders.find((o) => o.order_id === orderId);
    if (!order) throw new Error(`no order ${orderId}`);
    if (order.type !== 'spot' || order.endedMs !== undefined)
      throw new Error(`order ${orderId} is not an active spot order`);
    if (!(price > order.price)) throw new Error(`an outbidding price must be above the order's ${order.price}`);
    order.outbidBy = price;
    order.forcedPhase = 'paused';
    return this.snapshot(order, now);
  }

  /** A server's spot market: the server and its active spot orders. */
  public spotMarket(serverParam: string | null, now: number): Outcome<{ server: SimServer; offers: SimOrder[] }> {
    this.sweep(now);
    const id = serverParam !== null && /^\d+$/.test(serverParam) ? Number(serverParam) : undefined;
    const server = id === undefined ? undefined : this.servers.find((s) => s.id === id);
    if (!server) return invalid();
    const offers = this.orders
      .filter(
        (o) => o.renting_server === server.id && o.type === 'spot' && o.endedMs === undefined && now >= o.visibleAtMs,
      )
      .map((o) => this.snapshot(o, now));
    return { ok: { server: clone(server), offers } };
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

  /** Records where the order's ssh answers (the ssh line and `pub_cluster` / `22:` mapping of both dialects point there). */
  public setSshEndpoint(id: number, endpoint: { readonly host: string; readonly port: number }): void {
    const order = this.orders.find((o) => o.order_id === id);
    if (order) order.ssh = endpoint;
  }

  public setBalance(currency: string, balance: number): void {
    this.wallets.set(currency, balance);
  }

  /** Every order ever created, ended ones included. */
  public allOrders(now: number): SimOrder[] {
    this.sweep(now);
    return this.orders.map((o) => this.snapshot(o, now));
  }

  /** Every order created so far shows in my_orders from `now` on, however late it was due to show. */
  public revealOrders(now: number): void {
    this.orders = this.orders.map((o) => (o.visibleAtMs > now ? { ...o, visibleAtMs: now } : o));
  }

  /**
   * Changes an order's status the way the marketplace might on its own: `online: false` pauses a
   * running order (or holds a starting one offline), `online: true` or `status: 'running'` makes it
   * run now, `expired: true` or `status: 'expired'` ends it (and frees its server). An ended order
   * cannot come back.
   */
  public patchOrder(id: number, patch: OrderPatch, now: number): SimOrder {
    this.sweep(now);
    const order = this.orders.find((o) => o.order_id === id);
    if (!order) throw new Error(`no order ${id}`);
    const end = patch.expired === true || patch.status === 'expired';
    const phase = this.phaseOf(order, now);
    if (order.endedMs !== undefined) {
      if (!end && (patch.status !== undefined || patch.online !== undefined || patch.expired === false))
        throw new Error(`order ${id} has ended`);
      return this.snapshot(order, now);
    }
    if (end) {
      this.end(order, now, 'expired');
      return this.snapshot(order, now);
    }
    let next: Exclude<OrderPhase, 'expired'> | undefined = patch.status as Exclude<OrderPhase, 'expired'> | undefined;
    if (patch.online === true) next = 'running';
    if (patch.online === false)
      next = phase === 'running' ? 'paused' : (next ?? (phase as Exclude<OrderPhase, 'expired'>));
    if (next === undefined) return this.snapshot(order, now);
    if (next === 'running' && order.startedMs === undefined && now < order.readyAtMs) order.startedMs = now;
    order.forcedPhase = next;
    return this.snapshot(order, now);
  }

  // ---- internals ----------------------------------------------------------------------------

  /** Orders past their server's maximum rental time expire and free the server. */
  private sweep(now: number): void {
    for (const order of this.orders) {
      if (order.endedMs === undefined && now >= order.readyAtMs + order.mrlHours * 3_600_000)
        this.end(order, now, 'expired');
    }
  }

  private end(order: OrderRecord, now: number, reason: 'cancelled' | 'expired'): void {
    order.endedMs = now;
    order.endReason = reason;
    this.options.onOrderEnded?.(order.order_id);
    // An outbidding renter keeps the server when the outbid order ends.
    const stillRented =
      order.outbidBy !== undefined ||
      this.orders.some((o) => o !== order && o.renting_server === order.renting_server && o.endedMs === undefined);
    if (!stillRented && this.servers.some((s) => s.id === order.renting_server))
      this.patchServer(order.renting_server, { rented: false });
  }

  private phaseOf(order: OrderRecord, now: number): OrderPhase {
    if (order.endedMs !== undefined) return 'expired';
    if (order.forcedPhase) return order.forcedPhase;
    return now >= order.readyAtMs ? 'running' : 'creating_order';
  }

  private snapshot(order: OrderRecord, now: number): SimOrder {
    const { forcedPhase: _forced, ...rest } = order;
    const naturalStart =
      now >= order.readyAtMs && (order.endedMs === undefined || order.endedMs >= order.readyAtMs)
        ? order.readyAtMs
        : undefined;
    const startedAtMs = order.startedMs ?? naturalStart;
    return { ...clone(rest), phase: this.phaseOf(order, now), ...(startedAtMs !== undefined ? { startedAtMs } : {}) };
  }
}
