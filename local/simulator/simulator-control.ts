/**
 * The simulator's scenario control (marketplace-simulator.ts): what tests can change and read, as an
 * in-process object and as JSON routes under `/_sim/`.
 */
import type { IncomingMessage, ServerResponse } from 'node:http';
import * as z from 'zod';
import type { SimServer } from './catalogue';
import type { Dialect } from './dialect';
import type { SpecOrder } from './dialect-spec';
import { OrderPatchSchema, type OrderPatch, type SpotPriceCall } from './marketplace-state';
import { parseJson, sendJson } from './simulator-http';
import type { SimSshConnections, SimSshLogins } from './ssh-endpoints';

export type { SimSshLogins } from './ssh-endpoints';

/**
 * An order as control.orders() reports it, in every dialect: the spec's view (status included) plus
 * what the simulator knows, and the live flags. Coin names are the dialect's.
 */
export interface SimOrderView extends SpecOrder {
  readonly image: string;
  readonly completed: boolean;
  readonly end_reason?: 'cancelled' | 'expired';
  /** When it ended (Unix seconds, fractions kept), for comparing what was rented with the relay's ledger. */
  readonly ended_at?: number;
  /** When it started running (Unix seconds, fractions kept). */
  readonly started_at?: number;
  /**
   * What the marketplace charged for it so far in USD: each price step × the time run at it, at the
   * server's USD rate of the order's coin, plus the dialect's renter and creation fees (the live
   * dialect's `spend` and `creation_fee` in USD; the spec's marketplace charges no fees).
   */
  readonly spend_usd: number;
  /** Its prices from when (Unix seconds), each in USD per hour at the server's rate (no fees). */
  readonly price_steps: readonly { readonly from: number; readonly usd_per_hour: number }[];
  /** Running now (the live dialect's `online`). */
  readonly online: boolean;
  /** Ended, cancelled or run out (the live dialect's `expired`). */
  readonly expired: boolean;
  /** Connections its ssh endpoint answered with a banner, and reset because its ssh did not answer yet. */
  readonly ssh_connections: SimSshConnections;
  /** Logins its ssh server accepted and refused: by password (`accepted`, `refused`) and by key (`key_accepted`, `key_refused`). */
  readonly ssh_logins: SimSshLogins;
}

/** A wallet as the control reports it. */
export interface SimWallet {
  readonly name: string;
  readonly balance: number;
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
  /** How long after its ssh answers an order's ssh server accepts its password (null: never); applies to running orders too. */
  setSshLoginDelay(ms: number | null): void;
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
  /**
   * Another renter outbids a spot order with `price` (the order's currency per day): the order pauses
   * (spec: `paused`; live: `online: false`) while that renter holds the server, until the order bids
   * more through set_spot_price. Throws for an unknown, ended or on-demand order or a price not above the order's.
   */
  outbid(orderId: number, price: number): SimOrderView;
  /** Largest spot price raise per set_spot_price, as a fraction of the current price (null: any raise, the default); refused with `exceeded_max_step` + `max_step`. */
  setSpotRaiseStep(fraction: number | null): void;
  /** Every set_spot_price call since the last reset, in order (refused ones too). */
  spotPriceCalls(): SpotPriceCallView[];
  /**
   * The create_order body the simulator received for order `orderId`: the parsed JSON as sent (the
   * dialect's coin names, unknown fields and the access fields `ssh_key`, `ssh_password`,
   * `jupyter_token`, `command`, `autossh_entrypoint` included), so a test can tell what the
   * marketplace request carried; undefined for an order it did not create (or created before the
   * last reset). Test-facing only: my_orders shows none of the secrets.
   */
  orderRequest(orderId: number): Readonly<Record<string, unknown>> | undefined;
  /** Logins on the order's ssh endpoint, by password and by key (also after it closed; zeros for an unknown order). */
  sshLogins(orderId: number): SimSshLogins;
  /** The public line of the ssh host key every order's endpoint presents (`ssh-ed25519 AAAA…`), one per simulator process. */
  sshHostKey(): string;
}

/** A recorded set_spot_price call (prices in the order's currency per day). */
export type SpotPriceCallView = SpotPriceCall;

/** The `/_sim/` routes: the control's operations as JSON over HTTP (no auth, not rate limited, not counted). */
export const handleControlRoute = (
  control: SimulatorControl,
  spacing: { readonly minIntervalMs: number; readonly createIntervalMs: number },
  req: IncomingMessage,
  res: ServerResponse,
  url: URL,
  text: string,
): void => {
  const body = parseJson(text);
  const input = (typeof body === 'object' && body !== null ? body : {}) as Record<string, unknown>;
  const route = `${req.method} ${url.pathname}`;
  const serverMatch = /^\/_sim\/servers\/(\d+)$/.exec(url.pathname);
  const orderMatch = /^\/_sim\/orders\/(\d+)$/.exec(url.pathname);
  const requestMatch = /^\/_sim\/orders\/(\d+)\/request$/.exec(url.pathname);
  try {
    if (route === 'POST /_sim/reset') control.reset();
    else if (route === 'POST /_sim/ready-delay') control.setReadyDelay(z.number().int().nonnegative().parse(input.ms));
    else if (route === 'POST /_sim/ssh-delay') control.setSshDelay(z.number().int().nonnegative().parse(input.ms));
    else if (route === 'POST /_sim/ssh-login-delay')
      control.setSshLoginDelay(z.nullable(z.number().int().nonnegative()).parse(input.ms));
    else if (route === 'POST /_sim/visible-delay')
      control.setVisibleDelay(z.number().int().nonnegative().parse(input.ms));
    else if (route === 'POST /_sim/rate-limit') control.setRateLimit(z.boolean().parse(input.enabled));
    else if (route === 'POST /_sim/faults') control.inject(FaultSchema.parse(input));
    else if (route === 'DELETE /_sim/faults') control.clearFaults();
    else if (route === 'GET /_sim/counters') return sendJson(res, 200, control.counters());
    else if (route === 'GET /_sim/info')
      return sendJson(res, 200, { dialect: control.dialect, nativeCoin: control.nativeCoin, ...spacing });
    else if (route === 'GET /_sim/orders') return sendJson(res, 200, { orders: control.orders() });
    else if (requestMatch && req.method === 'GET') {
      const request = control.orderRequest(Number(requestMatch[1]));
      return request === undefined
        ? sendJson(res, 404, { error: `no create_order body for order ${requestMatch[1]}` })
        : sendJson(res, 200, { request });
    } else if (route === 'GET /_sim/ssh-host-key') return sendJson(res, 200, { host_key: control.sshHostKey() });
    else if (orderMatch && (req.method === 'PATCH' || req.method === 'POST')) {
      return sendJson(res, 200, { order: control.setOrder(Number(orderMatch[1]), OrderPatchSchema.parse(input)) });
    } else if (route === 'GET /_sim/servers') return sendJson(res, 200, { servers: control.servers() });
    else if (route === 'POST /_sim/servers') control.addServer(input as unknown as SimServer);
    else if (serverMatch && (req.method === 'PATCH' || req.method === 'POST'))
      control.setServer(Number(serverMatch[1]), input as Partial<SimServer>);
    else if (route === 'GET /_sim/wallets') return sendJson(res, 200, { wallets: control.wallets() });
    else if (route === 'POST /_sim/wallets')
      control.setBalance(z.string().min(1).parse(input.name), z.number().parse(input.balance));
    else if (route === 'POST /_sim/clock') control.advanceClock(z.number().nonnegative().parse(input.advanceMs));
    else if (route === 'POST /_sim/outbid')
      return sendJson(res, 200, {
        order: control.outbid(z.number().int().parse(input.order_id), z.number().positive().parse(input.price)),
      });
    else if (route === 'POST /_sim/spot-raise-step')
      control.setSpotRaiseStep(
        z
          .number()
          .positive()
          .nullable()
          .parse(input.fraction ?? null),
      );
    else if (route === 'GET /_sim/spot-price-calls') return sendJson(res, 200, { calls: control.spotPriceCalls() });
    else return sendJson(res, 404, { error: `no control route ${route}` });
    return sendJson(res, 200, { ok: true });
  } catch (error) {
    return sendJson(res, 400, { error: error instanceof Error ? error.message : String(error) });
  }
};
