/**
 * A marketplace simulator over plain node:http for `npm start` and the tests. One state
 * (marketplace-state.ts), two dialects (dialect.ts): `spec` is faithful to marketplace-api.md, every
 * answer HTTP 200 with the result code in `code`; `live` answers as production does
 * (marketplace-live.md): its shapes and coin names, HTTP 401 for a bad key and 429 for rate limits.
 * Faults injected through the control can break either on purpose.
 *
 * Scenario control is both an in-process object and JSON routes under `/_sim/` (no auth, not
 * rate limited, not counted), so tests in another process can drive a running simulator.
 */
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { performance } from 'node:perf_hooks';
import * as z from 'zod';
import type { SimServer } from './catalogue';
import { renameServerCoins, type Dialect, type DialectRenderer } from './dialect';
import { liveDialect } from './dialect-live';
import { specDialect, specOrderView, type SpecOrder } from './dialect-spec';
import { MarketplaceState, OrderPatchSchema, type OrderPatch, type Outcome, type SimBody, type SimOrder } from './marketplace-state';
import { SimSshEndpoints, type SimSshConnections } from './ssh-endpoints';

export type { SimServer } from './catalogue';
export { DIALECTS, parseDialect, type Dialect } from './dialect';
export type { OrderPatch, OrderPhase } from './marketplace-state';

/**
 * An order as control.orders() reports it, in every dialect: the spec's view (status included) plus
 * what the simulator knows, and the live flags. Coin names are the dialect's.
 */
export interface SimOrderView extends SpecOrder {
  readonly image: string;
  readonly completed: boolean;
  readonly end_reason?: 'cancelled' | 'expired';
  /** Running now (the live dialect's `online`). */
  readonly online: boolean;
  /** Ended, cancelled or run out (the live dialect's `expired`). */
  readonly expired: boolean;
  /** Connections its ssh endpoint answered with a banner, and reset because its ssh did not answer yet. */
  readonly ssh_connections: SimSshConnections;
}

/** A wallet as the control reports it. */
export interface SimWallet {
  readonly name: string;
  readonly balance: number;
}

const DIALECT_RENDERERS: Readonly<Record<Dialect, DialectRenderer>> = { spec: specDialect, live: liveDialect };

export interface SimulatorOptions {
  /** Answer shapes, coin names and HTTP statuses: marketplace-api.md or production's. @default 'spec' */
  readonly dialect?: Dialect;
  /** @default 0 (an ephemeral port) */
  readonly port?: number;
  /** @default '127.0.0.1' */
  readonly host?: string;
  /** Seed of the catalogue. @default 1 */
  readonly seed?: number;
  /** The one valid API key. @default 'sim-api-key' */
  readonly apiKey?: string;
  /** creating_order → running after this long. @default 3000 */
  readonly readyDelayMs?: number;
  /**
   * A running order's ssh endpoint (127.0.0.1, a port of its own) answers with an SSH banner this long
   * after the order started; before, connections are reset (production: `online` while ssh is refused). @default 0
   */
  readonly sshDelayMs?: number;
  /** A new order shows in my_orders only this long after create_order (production: up to 20 s). @default 0 */
  readonly visibleDelayMs?: number;
  /** Enforce the per-key request rate (code 5). @default true */
  readonly rateLimit?: boolean;
  /** Minimum spacing of requests per key when rate limiting. @default 1000 (1 request/s) */
  readonly minIntervalMs?: number;
  /**
   * Minimum spacing of create_order requests per key when rate limiting (a create_order also counts
   * for minIntervalMs). @default 5000 in the live dialect (production's 1 per 5 s), 0 in spec
   */
  readonly createIntervalMs?: number;
  /** Business clock (orders, readiness, spot price rules). Rate limiting always uses real time. @default Date.now */
  readonly now?: () => number;
  /** @default 40 */
  readonly serverCount?: number;
}

export const FAULT_KINDS = ['code', 'http500', 'malformed', 'slow', 'down', 'timeoutAfterSend'] as const;

export const FaultSchema = z.object({
  /** Endpoint name such as `create_order`, or `*` for all. */
  endpoint: z.string().min(1),
  /**
   * code: answer {code, error} without processing. http500: HTTP 500, text body, not processed.
   * malformed: processed, then an unreadable body. slow: processed after `delayMs`.
   * down: socket destroyed, not processed. timeoutAfterSend: processed (an order IS created), then
   * the socket is destroyed after `delayMs` (default 0) without an answer.
   */
  kind: z.enum(FAULT_KINDS),
  code: z.number().int().optional(),
  error: z.string().optional(),
  delayMs: z.number().int().nonnegative().optional(),
  /** `code` only: the HTTP status to answer with; production sends some refusals on HTTP 500 (S6). @default the dialect's */
  status: z.number().int().min(200).max(599).optional(),
  /** @default 1 */
  times: z.number().int().positive().optional(),
});
export type Fault = z.infer<typeof FaultSchema>;

export interface SimulatorCounters {
  /** Requests per endpoint name (`invalid` for unknown paths), including rejected ones. */
  readonly calls: Record<string, number>;
  /** Code 5 answers (HTTP 429 in the live dialect). */
  readonly rateLimited: number;
  /**
   * Requests per endpoint that passed auth and the rate limit (answered by the endpoint's rules or
   * an injected fault): the attempts a client really made, whatever arrival jitter added as code 5s.
   */
  readonly processed: Record<string, number>;
  readonly ordersCreated: number;
}

/** Scenario control, in-process; the same operations are served under `/_sim/`. */
export interface SimulatorControl {
  /** The dialect the simulator answers in. */
  readonly dialect: Dialect;
  /** The dialect's name of the marketplace's own coin (`NATIVE-Blockchain` or `CLORE-Blockchain`). */
  readonly nativeCoin: string;
  /** Back to the seeded catalogue, initial wallets, no orders, no faults, zero counters, initial options. */
  reset(): void;
  setReadyDelay(ms: number): void;
  /** How long after an order starts its ssh answers (see SimulatorOptions.sshDelayMs); applies to running orders too. */
  setSshDelay(ms: number): void;
  /** New orders show in my_orders this long after create_order (production: up to 20 s late). */
  setVisibleDelay(ms: number): void;
  /** Orders not listed yet (setVisibleDelay) show in my_orders now: a test ends the delay when it has seen what it needs. */
  revealOrders(): void;
  setRateLimit(enabled: boolean): void;
  inject(fault: Fault): void;
  clearFaults(): void;
  counters(): SimulatorCounters;
  /** Every order ever created, ended ones included. */
  orders(): SimOrderView[];
  /**
   * Changes an order's status as the marketplace might: `{online: false}` pauses it (live: online
   * false; spec: status paused), `{online: true}` or `{status: 'running'}` runs it now,
   * `{expired: true}` or `{status: 'expired'}` ends it and frees its server. Throws for an unknown
   * order or for reviving an ended one.
   */
  setOrder(id: number, patch: OrderPatch): SimOrderView;
  servers(): SimServer[];
  setServer(id: number, patch: Partial<SimServer>): void;
  addServer(server: Omit<SimServer, 'online'> & { online?: boolean }): void;
  setBalance(currency: string, balance: number): void;
  wallets(): SimWallet[];
  /** Moves the business clock forward (e.g. past the 600 s spot price rule). */
  advanceClock(ms: number): void;
}

export interface MarketplaceSimulator {
  /** Base URL, e.g. `http://127.0.0.1:40123` (paths start with `/v1`). */
  readonly url: string;
  readonly apiKey: string;
  readonly dialect: Dialect;
  /** The effective create_order spacing per key (ms), for the relay's MARKETPLACE_CREATE_INTERVAL_MS. */
  readonly createIntervalMs: number;
  readonly control: SimulatorControl;
  close(): Promise<void>;
}

const ENDPOINTS: Readonly<Record<string, 'GET' | 'POST'>> = {
  marketplace: 'GET',
  wallets: 'GET',
  create_order: 'POST',
  my_orders: 'GET',
  cancel_order: 'POST',
  set_spot_price: 'POST',
  spot_marketplace: 'GET',
};

const MAX_BODY_BYTES = 1_000_000;

const readBody = (req: IncomingMessage): Promise<string> =>
  new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    let size = 0;
    req.on('data', (chunk: Buffer) => {
      size += chunk.length;
      if (size <= MAX_BODY_BYTES) chunks.push(chunk);
    });
    req.on('end', () => resolve(Buffer.concat(chunks).toString('utf8')));
    req.on('error', reject);
  });

const sendJson = (res: ServerResponse, status: number, body: unknown): void => {
  const text = JSON.stringify(body);
  res.writeHead(status, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(text) });
  res.end(text);
};

const parseJson = (text: string): unknown => {
  if (text.trim() === '') return undefined;
  try {
    return JSON.parse(text) as unknown;
  } catch {
    return Symbol.for('invalid-json');
  }
};

/** Starts the simulator; resolves once it listens. */
export const startSimulator = async (opts: SimulatorOptions = {}): Promise<MarketplaceSimulator> => {
  const apiKey = opts.apiKey ?? 'sim-api-key';
  const initialRateLimit = opts.rateLimit ?? true;
  const minIntervalMs = opts.minIntervalMs ?? 1_000;
  const dialect: Dialect = opts.dialect ?? 'spec';
  const render = DIALECT_RENDERERS[dialect];
  if (!render) throw new Error(`unknown simulator dialect "${String(opts.dialect)}"`);
  const createIntervalMs = opts.createIntervalMs ?? (dialect === 'live' ? 5_000 : 0);
  const clock = opts.now ?? Date.now;
  const initialSshDelayMs = opts.sshDelayMs ?? 0;
  let sshDelayMs = initialSshDelayMs;
  const ssh = new SimSshEndpoints((orderId) => {
    const order = state.allOrders(now()).find((o) => o.order_id === orderId);
    return order?.phase === 'running' && now() >= (order.startedAtMs ?? order.readyAtMs) + sshDelayMs;
  });
  const state = new MarketplaceState({
    seed: opts.seed ?? 1, serverCount: opts.serverCount, readyDelayMs: opts.readyDelayMs ?? 3_000, visibleDelayMs: opts.visibleDelayMs ?? 0,
    onOrderEnded: (id) => ssh.close(id),
  });
  /** Opens the ssh endpoint of every active order that has none yet (new orders), before the answer goes out. */
  const openSshEndpoints = async (): Promise<void> => {
    // Every order, also those my_orders does not show yet (visibleDelayMs): the endpoint must exist when they do.
    const fresh = state.allOrders(now()).filter((o) => o.endedMs === undefined && o.ssh === undefined);
    await Promise.all(fresh.map(async (o) => {
      const endpoint = await ssh.open(o.order_id).catch(() => undefined);
      if (endpoint) state.setSshEndpoint(o.order_id, endpoint);
    }));
  };

  let rateLimit = initialRateLimit;
  let clockOffsetMs = 0;
  let faults: (Fault & { remaining: number })[] = [];
  let calls: Record<string, number> = {};
  let processed: Record<string, number> = {};
  let rateLimited = 0;
  const lastAccepted = new Map<string, number>();
  const lastCreateAccepted = new Map<string, number>();
  const pendingDelays = new Set<{ timer: NodeJS.Timeout; resolve: () => void }>();
  const now = () => clock() + clockOffsetMs;

  const delay = (ms: number): Promise<void> =>
    new Promise((resolve) => {
      const entry = { timer: setTimeout(() => { pendingDelays.delete(entry); resolve(); }, ms), resolve };
      pendingDelays.add(entry);
    });

  const takeFault = (endpoint: string): Fault | undefined => {
    const fault = faults.find((f) => f.endpoint === endpoint || f.endpoint === '*');
    if (!fault) return undefined;
    fault.remaining -= 1;
    if (fault.remaining <= 0) faults = faults.filter((f) => f !== fault);
    return fault;
  };

  const orderView = (order: SimOrder): SimOrderView => ({
    ...specOrderView(order),
    currency: render.coinOut(order.currency),
    image: order.image,
    completed: order.endedMs !== undefined,
    ...(order.endReason ? { end_reason: order.endReason } : {}),
    online: order.phase === 'running',
    expired: order.phase === 'expired',
    ssh_connections: ssh.connections(order.order_id),
  });

  const control: SimulatorControl = {
    dialect,
    nativeCoin: render.nativeCoin,
    reset: () => {
      void ssh.closeAll();
      state.reset();
      sshDelayMs = initialSshDelayMs;
      rateLimit = initialRateLimit;
      clockOffsetMs = 0;
      faults = [];
      calls = {};
      processed = {};
      rateLimited = 0;
      lastAccepted.clear();
      lastCreateAccepted.clear();
    },
    setReadyDelay: (ms) => { state.readyDelayMs = ms; },
    setSshDelay: (ms) => { sshDelayMs = ms; },
    setVisibleDelay: (ms) => { state.visibleDelayMs = ms; },
    revealOrders: () => { state.revealOrders(now()); },
    setRateLimit: (enabled) => { rateLimit = enabled; },
    inject: (fault) => { faults.push({ ...FaultSchema.parse(fault), remaining: fault.times ?? 1 }); },
    clearFaults: () => { faults = []; },
    counters: () => ({ calls: { ...calls }, processed: { ...processed }, rateLimited, ordersCreated: state.ordersCreated }),
    orders: () => state.allOrders(now()).map(orderView),
    setOrder: (id, patch) => orderView(state.patchOrder(id, OrderPatchSchema.parse(patch), now())),
    servers: () => state.allServers().map((s) => renameServerCoins(s, render.coinOut)),
    setServer: (id, patch) => state.patchServer(id, renameServerCoins(patch, render.coinIn)),
    addServer: (server) => state.addServer(renameServerCoins(server, render.coinIn)),
    setBalance: (currency, balance) => state.setBalance(render.coinIn(currency), balance),
    wallets: () => state.walletList().map(([name, balance]) => ({ name: render.coinOut(name), balance })),
    advanceClock: (ms) => { clockOffsetMs += ms; },
  };

  const rendered = <T>(outcome: Outcome<T>, ok: (value: T) => SimBody): SimBody =>
    'refused' in outcome ? render.refusal(outcome.refused) : ok(outcome.ok);

  /** The request body with the dialect's coin name turned into the state's. */
  const coinsIn = (body: unknown): unknown => {
    if (typeof body !== 'object' || body === null || Array.isArray(body)) return body;
    const currency = (body as { currency?: unknown }).currency;
    return typeof currency === 'string' ? { ...body, currency: render.coinIn(currency) } : body;
  };

  const dispatch = (endpoint: string, url: URL, body: unknown): SimBody => {
    const t = now();
    switch (endpoint) {
      case 'marketplace': return render.marketplace(state.marketplace(t));
      case 'wallets': return render.wallets(state.walletList());
      case 'create_order': return rendered(state.createOrder(coinsIn(body), t), render.createOrder);
      case 'my_orders': {
        const orders = state.myOrders(url.searchParams.get('return_completed') === 'true', t);
        const servers = new Map(state.allServers().map((s) => [s.id, s]));
        return render.myOrders(orders, (id) => servers.get(id), t);
      }
      case 'cancel_order': return rendered(state.cancelOrder(body, t), render.done);
      case 'set_spot_price': return rendered(state.setSpotPrice(body, t), render.done);
      case 'spot_marketplace': return rendered(state.spotMarket(url.searchParams.get('market'), t), ({ server, offers }) => render.spotMarket(server, offers));
      default: return { code: 4 };
    }
  };

  /** An API answer: the dialect picks the HTTP status of its result code. */
  const answer = (res: ServerResponse, body: SimBody): void => sendJson(res, render.httpStatus(body.code), body);

  const handleApi = async (req: IncomingMessage, res: ServerResponse, url: URL, text: string): Promise<void> => {
    const match = /^\/v1\/([a-z_]+)$/.exec(url.pathname);
    const endpoint = match && ENDPOINTS[match[1] as string] ? (match[1] as string) : 'invalid';
    calls[endpoint] = (calls[endpoint] ?? 0) + 1;

    const key = req.headers.auth;
    if (typeof key !== 'string' || key !== apiKey) return answer(res, { code: 3 });

    if (rateLimit) {
      const t = performance.now();
      const isCreate = endpoint === 'create_order' && req.method === 'POST';
      const last = lastAccepted.get(key);
      const lastCreate = isCreate ? lastCreateAccepted.get(key) : undefined;
      if ((last !== undefined && t - last < minIntervalMs) || (lastCreate !== undefined && t - lastCreate < createIntervalMs)) {
        rateLimited += 1;
        return answer(res, { code: 5 });
      }
      lastAccepted.set(key, t);
      if (isCreate) lastCreateAccepted.set(key, t);
    }

    if (endpoint === 'invalid' || ENDPOINTS[endpoint] !== req.method) return answer(res, { code: 4 });
    processed[endpoint] = (processed[endpoint] ?? 0) + 1;

    const fault = takeFault(endpoint);
    if (fault?.kind === 'code') {
      const body = { code: fault.code ?? 1, ...(fault.error ? { error: fault.error } : {}) };
      return fault.status === undefined ? answer(res, body) : sendJson(res, fault.status, body);
    }
    if (fault?.kind === 'http500') {
      res.writeHead(500, { 'content-type': 'text/plain' });
      res.end('Internal Server Error');
      return;
    }
    if (fault?.kind === 'down') {
      req.socket.destroy();
      return;
    }
    if (fault?.kind === 'slow') await delay(fault.delayMs ?? 1_000);

    const body = parseJson(text);
    const result = typeof body === 'symbol' ? { code: 2 } : dispatch(endpoint, url, body);
    if (endpoint === 'create_order') await openSshEndpoints();

    if (fault?.kind === 'malformed') {
      res.writeHead(200, { 'content-type': 'application/json' });
      res.end('{"code":0,"order_id":');
      return;
    }
    if (fault?.kind === 'timeoutAfterSend') {
      if (fault.delayMs) await delay(fault.delayMs);
      req.socket.destroy();
      return;
    }
    answer(res, result);
  };

  const handleControl = (req: IncomingMessage, res: ServerResponse, url: URL, text: string): void => {
    const body = parseJson(text);
    const input = (typeof body === 'object' && body !== null ? body : {}) as Record<string, unknown>;
    const route = `${req.method} ${url.pathname}`;
    const serverMatch = /^\/_sim\/servers\/(\d+)$/.exec(url.pathname);
    const orderMatch = /^\/_sim\/orders\/(\d+)$/.exec(url.pathname);
    try {
      if (route === 'POST /_sim/reset') control.reset();
      else if (route === 'POST /_sim/ready-delay') control.setReadyDelay(z.number().int().nonnegative().parse(input.ms));
      else if (route === 'POST /_sim/ssh-delay') control.setSshDelay(z.number().int().nonnegative().parse(input.ms));
      else if (route === 'POST /_sim/visible-delay') control.setVisibleDelay(z.number().int().nonnegative().parse(input.ms));
      else if (route === 'POST /_sim/rate-limit') control.setRateLimit(z.boolean().parse(input.enabled));
      else if (route === 'POST /_sim/faults') control.inject(FaultSchema.parse(input));
      else if (route === 'DELETE /_sim/faults') control.clearFaults();
      else if (route === 'GET /_sim/counters') return sendJson(res, 200, control.counters());
      else if (route === 'GET /_sim/info') return sendJson(res, 200, { dialect, nativeCoin: render.nativeCoin, minIntervalMs, createIntervalMs });
      else if (route === 'GET /_sim/orders') return sendJson(res, 200, { orders: control.orders() });
      else if (orderMatch && (req.method === 'PATCH' || req.method === 'POST')) {
        return sendJson(res, 200, { order: control.setOrder(Number(orderMatch[1]), OrderPatchSchema.parse(input)) });
      }
      else if (route === 'GET /_sim/servers') return sendJson(res, 200, { servers: control.servers() });
      else if (route === 'POST /_sim/servers') control.addServer(input as unknown as SimServer);
      else if (serverMatch && (req.method === 'PATCH' || req.method === 'POST')) control.setServer(Number(serverMatch[1]), input as Partial<SimServer>);
      else if (route === 'GET /_sim/wallets') return sendJson(res, 200, { wallets: control.wallets() });
      else if (route === 'POST /_sim/wallets') control.setBalance(z.string().min(1).parse(input.name), z.number().parse(input.balance));
      else if (route === 'POST /_sim/clock') control.advanceClock(z.number().nonnegative().parse(input.advanceMs));
      else return sendJson(res, 404, { error: `no control route ${route}` });
      return sendJson(res, 200, { ok: true });
    } catch (error) {
      return sendJson(res, 400, { error: error instanceof Error ? error.message : String(error) });
    }
  };

  const server = createServer((req, res) => {
    void (async () => {
      const url = new URL(req.url ?? '/', 'http://simulator.invalid');
      const text = await readBody(req);
      if (url.pathname.startsWith('/_sim/')) handleControl(req, res, url, text);
      else await handleApi(req, res, url, text);
    })().catch(() => {
      if (!res.headersSent) sendJson(res, 200, { code: 1 });
      else res.destroy();
    });
  });

  const host = opts.host ?? '127.0.0.1';
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(opts.port ?? 0, host, () => {
      server.off('error', reject);
      resolve();
    });
  });
  const { port } = server.address() as AddressInfo;
  const urlHost = host.includes(':') ? `[${host}]` : host;

  return {
    url: `http://${urlHost}:${port}`,
    apiKey,
    dialect,
    createIntervalMs,
    control,
    close: async () => {
      for (const entry of pendingDelays) {
        clearTimeout(entry.timer);
        entry.resolve();
      }
      pendingDelays.clear();
      await ssh.closeAll();
      await new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
      });
    },
  };
};
