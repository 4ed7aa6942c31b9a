/**
 * A marketplace simulator over plain node:http, faithful to marketplace-api.md, for `npm start` and
 * the tests. Every answer is HTTP 200 with a JSON body carrying the result code in `code` (the spec
 * maps no results to HTTP statuses); faults injected through the control can break that on purpose.
 *
 * Scenario control is both an in-process object and JSON routes under `/_sim/` (no auth, not
 * rate limited, not counted), so tests in another process can drive a running simulator.
 */
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { performance } from 'node:perf_hooks';
import * as z from 'zod';
import type { Wallet } from '../../lambdas/domain/marketplace-types';
import type { SimServer } from './catalogue';
import { MarketplaceState, type SimBody, type SimOrderView } from './marketplace-state';

export type { SimServer } from './catalogue';
export type { SimOrderView } from './marketplace-state';

export interface SimulatorOptions {
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
  /** Enforce the per-key request rate (code 5). @default true */
  readonly rateLimit?: boolean;
  /** Minimum spacing of requests per key when rate limiting. @default 1000 (1 request/s) */
  readonly minIntervalMs?: number;
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
  /** @default 1 */
  times: z.number().int().positive().optional(),
});
export type Fault = z.infer<typeof FaultSchema>;

export interface SimulatorCounters {
  /** Requests per endpoint name (`invalid` for unknown paths), including rejected ones. */
  readonly calls: Record<string, number>;
  /** Code 5 answers. */
  readonly rateLimited: number;
  readonly ordersCreated: number;
}

/** Scenario control, in-process; the same operations are served under `/_sim/`. */
export interface SimulatorControl {
  /** Back to the seeded catalogue, initial wallets, no orders, no faults, zero counters, initial options. */
  reset(): void;
  setReadyDelay(ms: number): void;
  setRateLimit(enabled: boolean): void;
  inject(fault: Fault): void;
  clearFaults(): void;
  counters(): SimulatorCounters;
  /** Every order ever created, ended ones included. */
  orders(): SimOrderView[];
  servers(): SimServer[];
  setServer(id: number, patch: Partial<SimServer>): void;
  addServer(server: Omit<SimServer, 'online'> & { online?: boolean }): void;
  setBalance(currency: string, balance: number): void;
  wallets(): Wallet[];
  /** Moves the business clock forward (e.g. past the 600 s spot price rule). */
  advanceClock(ms: number): void;
}

export interface MarketplaceSimulator {
  /** Base URL, e.g. `http://127.0.0.1:40123` (paths start with `/v1`). */
  readonly url: string;
  readonly apiKey: string;
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
  const clock = opts.now ?? Date.now;
  const state = new MarketplaceState({ seed: opts.seed ?? 1, serverCount: opts.serverCount, readyDelayMs: opts.readyDelayMs ?? 3_000 });

  let rateLimit = initialRateLimit;
  let clockOffsetMs = 0;
  let faults: (Fault & { remaining: number })[] = [];
  let calls: Record<string, number> = {};
  let rateLimited = 0;
  const lastAccepted = new Map<string, number>();
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

  const control: SimulatorControl = {
    reset: () => {
      state.reset();
      rateLimit = initialRateLimit;
      clockOffsetMs = 0;
      faults = [];
      calls = {};
      rateLimited = 0;
      lastAccepted.clear();
    },
    setReadyDelay: (ms) => { state.readyDelayMs = ms; },
    setRateLimit: (enabled) => { rateLimit = enabled; },
    inject: (fault) => { faults.push({ ...FaultSchema.parse(fault), remaining: fault.times ?? 1 }); },
    clearFaults: () => { faults = []; },
    counters: () => ({ calls: { ...calls }, rateLimited, ordersCreated: state.ordersCreated }),
    orders: () => state.allOrders(now()),
    servers: () => state.allServers(),
    setServer: (id, patch) => state.patchServer(id, patch),
    addServer: (server) => state.addServer(server),
    setBalance: (currency, balance) => state.setBalance(currency, balance),
    wallets: () => state.allWallets(),
    advanceClock: (ms) => { clockOffsetMs += ms; },
  };

  const dispatch = (endpoint: string, url: URL, body: unknown): SimBody => {
    const t = now();
    switch (endpoint) {
      case 'marketplace': return state.marketplace(t);
      case 'wallets': return state.walletList();
      case 'create_order': return state.createOrder(body, t);
      case 'my_orders': return state.myOrders(url.searchParams.get('return_completed') === 'true', t);
      case 'cancel_order': return state.cancelOrder(body, t);
      case 'set_spot_price': return state.setSpotPrice(body, t);
      case 'spot_marketplace': return state.spotMarket(url.searchParams.get('market'), t);
      default: return { code: 4 };
    }
  };

  const handleApi = async (req: IncomingMessage, res: ServerResponse, url: URL, text: string): Promise<void> => {
    const match = /^\/v1\/([a-z_]+)$/.exec(url.pathname);
    const endpoint = match && ENDPOINTS[match[1] as string] ? (match[1] as string) : 'invalid';
    calls[endpoint] = (calls[endpoint] ?? 0) + 1;

    const key = req.headers.auth;
    if (typeof key !== 'string' || key !== apiKey) return sendJson(res, 200, { code: 3 });

    if (rateLimit) {
      const t = performance.now();
      const last = lastAccepted.get(key);
      if (last !== undefined && t - last < minIntervalMs) {
        rateLimited += 1;
        return sendJson(res, 200, { code: 5 });
      }
      lastAccepted.set(key, t);
    }

    if (endpoint === 'invalid' || ENDPOINTS[endpoint] !== req.method) return sendJson(res, 200, { code: 4 });

    const fault = takeFault(endpoint);
    if (fault?.kind === 'code') return sendJson(res, 200, { code: fault.code ?? 1, ...(fault.error ? { error: fault.error } : {}) });
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
    sendJson(res, 200, result);
  };

  const handleControl = (req: IncomingMessage, res: ServerResponse, url: URL, text: string): void => {
    const body = parseJson(text);
    const input = (typeof body === 'object' && body !== null ? body : {}) as Record<string, unknown>;
    const route = `${req.method} ${url.pathname}`;
    const serverMatch = /^\/_sim\/servers\/(\d+)$/.exec(url.pathname);
    try {
      if (route === 'POST /_sim/reset') control.reset();
      else if (route === 'POST /_sim/ready-delay') control.setReadyDelay(z.number().int().nonnegative().parse(input.ms));
      else if (route === 'POST /_sim/rate-limit') control.setRateLimit(z.boolean().parse(input.enabled));
      else if (route === 'POST /_sim/faults') control.inject(FaultSchema.parse(input));
      else if (route === 'DELETE /_sim/faults') control.clearFaults();
      else if (route === 'GET /_sim/counters') return sendJson(res, 200, control.counters());
      else if (route === 'GET /_sim/orders') return sendJson(res, 200, { orders: control.orders() });
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
    control,
    close: async () => {
      for (const entry of pendingDelays) {
        clearTimeout(entry.timer);
        entry.resolve();
      }
      pendingDelays.clear();
      await new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
      });
    },
  };
};
