/**
 * A marketplace simulator over plain node:http for `npm start` and the tests. One state
 * (marketplace-state.ts), two dialects (dialect.ts): `spec` is faithful to marketplace-api.md, every
 * answer HTTP 200 with the result code in `code`; `live` answers as production does
 * (marketplace-live.md): its shapes and coin names, HTTP 401 for a bad key and 429 for rate limits.
 * Faults injected through the control can break either on purpose.
 *
 * Scenario control is both an in-process object and JSON routes under `/_sim/` (no auth, not
 * rate limited, not counted), so tests in another process can drive a running simulator
 * (simulator-control.ts).
 */
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { performance } from 'node:perf_hooks';
import { renameServerCoins, type Dialect, type DialectRenderer } from './dialect';
import { liveDialect } from './dialect-live';
import { specDialect, specOrderView } from './dialect-spec';
import {
  chargedUnits,
  MarketplaceState,
  OrderPatchSchema,
  type Outcome,
  type SimBody,
  type SimOrder,
} from './marketplace-state';
import {
  FaultSchema,
  handleControlRoute,
  type Fault,
  type SimOrderView,
  type SimulatorControl,
} from './simulator-control';
import { parseJson, readBody, sendJson } from './simulator-http';
import { SimSshEndpoints } from './ssh-endpoints';

export type { SimServer } from './catalogue';
export { DIALECTS, parseDialect, type Dialect } from './dialect';
export type { OrderPatch, OrderPhase } from './marketplace-state';
export {
  FAULT_KINDS,
  FaultSchema,
  type Fault,
  type SimOrderView,
  type SimSshLogins,
  type SimulatorControl,
  type SimulatorCounters,
  type SimWallet,
  type SpotPriceCallView,
} from './simulator-control';

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
  /**
   * Its ssh server accepts a login with the order's ssh_password this long after its ssh started
   * answering; before, "Permission denied" (issue 31 §4). null: never. @default 0
   */
  readonly sshLoginDelayMs?: number | null;
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
  /** Also list the servers the documented examples rent (./docs-servers.ts); npm start sets it. @default false */
  readonly docsServers?: boolean;
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
  const initialSshLoginDelayMs = opts.sshLoginDelayMs === undefined ? 0 : opts.sshLoginDelayMs;
  let sshLoginDelayMs = initialSshLoginDelayMs;
  const orderOf = (orderId: number): SimOrder | undefined => state.allOrders(now()).find((o) => o.order_id === orderId);
  /** When the order's ssh answers (a banner), or undefined while it does not run. */
  const sshAnswersAt = (order: SimOrder | undefined): number | undefined =>
    order?.phase === 'running' ? (order.startedAtMs ?? order.readyAtMs) + sshDelayMs : undefined;
  /** Whether the order's ssh server takes logins now (password and key alike): sshLoginDelayMs after its ssh answers. */
  const loginWorks = (order: SimOrder | undefined): boolean => {
    const at = sshAnswersAt(order);
    return at !== undefined && sshLoginDelayMs !== null && now() >= at + sshLoginDelayMs;
  };
  const ssh = new SimSshEndpoints(
    (orderId) => {
      const at = sshAnswersAt(orderOf(orderId));
      return at !== undefined && now() >= at;
    },
    (orderId, password) => {
      const order = orderOf(orderId);
      return loginWorks(order) && order?.ssh_password !== undefined && order.ssh_password === password;
    },
    {
      authorizedKey: (orderId) => {
        const order = orderOf(orderId);
        return loginWorks(order) ? order?.ssh_key : undefined;
      },
      machine: (orderId) => {
        const serverId = orderOf(orderId)?.renting_server;
        return { gpus: state.allServers().find((s) => s.id === serverId)?.gpu_array ?? [] };
      },
    },
  );
  const state = new MarketplaceState({
    seed: opts.seed ?? 1,
    serverCount: opts.serverCount,
    docsServers: opts.docsServers,
    readyDelayMs: opts.readyDelayMs ?? 3_000,
    visibleDelayMs: opts.visibleDelayMs ?? 0,
    onOrderEnded: (id) => ssh.close(id),
  });
  /** Opens the ssh endpoint of every active order that has none yet (new orders), before the answer goes out. */
  const openSshEndpoints = async (): Promise<void> => {
    // Every order, also those my_orders does not show yet (visibleDelayMs): the endpoint must exist when they do.
    const fresh = state.allOrders(now()).filter((o) => o.endedMs === undefined && o.ssh === undefined);
    await Promise.all(
      fresh.map(async (o) => {
        const endpoint = await ssh.open(o.order_id).catch(() => undefined);
        if (endpoint) state.setSshEndpoint(o.order_id, endpoint);
      }),
    );
  };

  /** The create_order body received for each order created (as sent), for control.orderRequest. */
  const createOrderBodies = new Map<number, Record<string, unknown>>();
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
      const entry = {
        timer: setTimeout(() => {
          pendingDelays.delete(entry);
          resolve();
        }, ms),
        resolve,
      };
      pendingDelays.add(entry);
    });

  const takeFault = (endpoint: string): Fault | undefined => {
    const fault = faults.find((f) => f.endpoint === endpoint || f.endpoint === '*');
    if (!fault) return undefined;
    fault.remaining -= 1;
    if (fault.remaining <= 0) faults = faults.filter((f) => f !== fault);
    return fault;
  };

  /** USD per unit of the order's coin: the server's on-demand USD per period over its price in that coin. */
  const usdPerCoin = (order: SimOrder): number => {
    const server = state.allServers().find((s) => s.id === order.renting_server);
    const coin = server?.price.on_demand[order.currency];
    const usd = server?.price.usd.on_demand_native;
    return coin && usd ? (usd * render.pricePeriodHours) / coin : 0;
  };
  const spendUsd = (order: SimOrder): number => {
    const units = chargedUnits(order, now(), render.pricePeriodHours * 3_600_000);
    return units * usdPerCoin(order) * (1 + render.fees.renter) + render.fees.creationUsd;
  };

  const orderView = (order: SimOrder): SimOrderView => ({
    ...specOrderView(order),
    currency: render.coinOut(order.currency),
    image: order.image,
    completed: order.endedMs !== undefined,
    ...(order.endReason ? { end_reason: order.endReason } : {}),
    ...(order.endedMs !== undefined ? { ended_at: order.endedMs / 1000 } : {}),
    ...(order.startedAtMs !== undefined ? { started_at: order.startedAtMs / 1000 } : {}),
    spend_usd: spendUsd(order),
    price_steps: order.priceSteps.map((step) => ({
      from: step.fromMs / 1000,
      usd_per_hour: (step.price * usdPerCoin(order)) / render.pricePeriodHours,
    })),
    online: order.phase === 'running',
    expired: order.phase === 'expired',
    ssh_connections: ssh.connections(order.order_id),
    ssh_logins: ssh.logins(order.order_id),
  });

  const control: SimulatorControl = {
    dialect,
    nativeCoin: render.nativeCoin,
    reset: () => {
      void ssh.closeAll();
      state.reset();
      sshDelayMs = initialSshDelayMs;
      sshLoginDelayMs = initialSshLoginDelayMs;
      rateLimit = initialRateLimit;
      clockOffsetMs = 0;
      faults = [];
      calls = {};
      processed = {};
      rateLimited = 0;
      lastAccepted.clear();
      lastCreateAccepted.clear();
      createOrderBodies.clear();
    },
    setReadyDelay: (ms) => {
      state.readyDelayMs = ms;
    },
    setSshDelay: (ms) => {
      sshDelayMs = ms;
    },
    setSshLoginDelay: (ms) => {
      sshLoginDelayMs = ms;
    },
    setVisibleDelay: (ms) => {
      state.visibleDelayMs = ms;
    },
    revealOrders: () => {
      state.revealOrders(now());
    },
    setRateLimit: (enabled) => {
      rateLimit = enabled;
    },
    inject: (fault) => {
      faults.push({ ...FaultSchema.parse(fault), remaining: fault.times ?? 1 });
    },
    clearFaults: () => {
      faults = [];
    },
    counters: () => ({
      calls: { ...calls },
      processed: { ...processed },
      rateLimited,
      ordersCreated: state.ordersCreated,
    }),
    orders: () => state.allOrders(now()).map(orderView),
    setOrder: (id, patch) => orderView(state.patchOrder(id, OrderPatchSchema.parse(patch), now())),
    servers: () => state.allServers().map((s) => renameServerCoins(s, render.coinOut)),
    setServer: (id, patch) => state.patchServer(id, renameServerCoins(patch, render.coinIn)),
    addServer: (server) => state.addServer(renameServerCoins(server, render.coinIn)),
    setBalance: (currency, balance) => state.setBalance(render.coinIn(currency), balance),
    wallets: () => state.walletList().map(([name, balance]) => ({ name: render.coinOut(name), balance })),
    advanceClock: (ms) => {
      clockOffsetMs += ms;
    },
    outbid: (orderId, price) => orderView(state.outbid(orderId, price, now())),
    setSpotRaiseStep: (fraction) => {
      state.raiseStepFraction = fraction ?? undefined;
    },
    spotPriceCalls: () => state.spotPriceCalls.map((c) => ({ ...c })),
    orderRequest: (orderId) => {
      const body = createOrderBodies.get(orderId);
      return body === undefined ? undefined : structuredClone(body);
    },
    sshLogins: (orderId) => ssh.logins(orderId),
    sshHostKey: () => ssh.hostKey(),
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
      case 'marketplace':
        return render.marketplace(state.marketplace(t));
      case 'wallets':
        return render.wallets(state.walletList());
      case 'create_order': {
        const outcome = state.createOrder(coinsIn(body), t);
        // A created order's body was a JSON object (the schema took it).
        if ('ok' in outcome)
          createOrderBodies.set(outcome.ok.order_id, structuredClone(body) as Record<string, unknown>);
        return rendered(outcome, render.createOrder);
      }
      case 'my_orders': {
        const orders = state.myOrders(url.searchParams.get('return_completed') === 'true', t);
        const servers = new Map(state.allServers().map((s) => [s.id, s]));
        return render.myOrders(orders, (id) => servers.get(id), t);
      }
      case 'cancel_order':
        return rendered(state.cancelOrder(body, t), render.done);
      case 'set_spot_price':
        return rendered(state.setSpotPrice(body, t), render.done);
      case 'spot_marketplace':
        return rendered(state.spotMarket(url.searchParams.get('market'), t), ({ server, offers }) =>
          render.spotMarket(server, offers),
        );
      default:
        return { code: 4 };
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
      if (
        (last !== undefined && t - last < minIntervalMs) ||
        (lastCreate !== undefined && t - lastCreate < createIntervalMs)
      ) {
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

  const server = createServer((req, res) => {
    void (async () => {
      const url = new URL(req.url ?? '/', 'http://simulator.invalid');
      const text = await readBody(req);
      if (url.pathname.startsWith('/_sim/'))
        handleControlRoute(control, { minIntervalMs, createIntervalMs }, req, res, url, text);
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
