/**
 * The marketplace over HTTP (marketplace-api.md): all 7 endpoints, the `auth` header and a timeout
 * on every call, shared pacing per API key, result codes as typed domain errors, full-jitter backoff
 * on code 5, network retries only for reads, and a create_order that is never retried blindly.
 */
import type * as z from 'zod';
import {
  MarketplaceAuthError,
  MarketplaceDatabaseError,
  MarketplaceEndpointError,
  MarketplaceError,
  MarketplaceInvalidInputError,
  MarketplaceRateLimitedError,
  MarketplaceRejectedError,
  MarketplaceUnavailableError,
  OrderOutcomeUnknownError,
} from '../domain/errors';
import type { CreateOrderRequest, Order, Server, Wallet } from '../domain/marketplace-types';
import type { MarketplaceClient, PacingGate } from '../domain/ports';
import { apiKeyId } from './key-id';
import {
  CancelOrderResponseSchema,
  CreateOrderResponseSchema,
  EnvelopeSchema,
  MarketplaceResponseSchema,
  MyOrdersResponseSchema,
  ResultCode,
  SetSpotPriceResponseSchema,
  SpotMarketResponseSchema,
  WalletsResponseSchema,
} from './schemas';
import { validateOrderRequest } from './validate-order';

export interface HttpMarketplaceClientOptions {
  /** Base URL without the `/v1` prefix, e.g. `https://api.example.com`. */
  readonly baseUrl: string;
  /** Returns the API key; called per request so a rotated secret is picked up. */
  readonly apiKey: () => Promise<string>;
  /** Shared 1 request per interval per API key. */
  readonly pacing: PacingGate;
  /** @default first 16 hex characters of sha256(apiKey) */
  readonly keyId?: string;
  /** @default 1000 (the marketplace's 1 request/s) */
  readonly minIntervalMs?: number;
  /** Per attempt, covering connect, send and reading the body. @default 10000 */
  readonly timeoutMs?: number;
  /** @default globalThis.fetch */
  readonly fetchFn?: typeof fetch;
  /** @default setTimeout-based sleep */
  readonly sleep?: (ms: number) => Promise<void>;
  /** @default Date.now */
  readonly now?: () => number;
  /** Jitter source in [0, 1). @default Math.random */
  readonly random?: () => number;
  /** Retries after a code 5 answer. @default 4 */
  readonly maxRateLimitRetries?: number;
  /** Retries of a read after a network failure, timeout, HTTP 5xx or unreadable body. @default 2 */
  readonly maxNetworkRetries?: number;
  /** Backoff before retry n (0-based) is random() × min(maxBackoffMs, baseBackoffMs × 2^n). @default 1000 */
  readonly baseBackoffMs?: number;
  /** @default 16000 */
  readonly maxBackoffMs?: number;
  /** How late after its slot a call may still be sent; see pace(). @default minIntervalMs / 10, within [5, 100] */
  readonly maxLatenessMs?: number;
  /** Called once per marketplace error (a non-zero result code, or 'network' for anything else). */
  readonly onError?: (code: number | 'network') => void;
}

type Method = 'GET' | 'POST';

/** Late slots dropped before sending anyway (a gate that is always slow must not stall calls). */
const MAX_LATE_SLOTS = 3;

interface CallSpec<S extends z.ZodType> {
  readonly endpoint: string;
  readonly method: Method;
  readonly schema: S;
  readonly query?: Record<string, string>;
  readonly body?: unknown;
}

/** A failure with no result code; `maybeSent` says whether the request may have reached the server. */
class TransportFailure {
  public constructor(
    public readonly message: string,
    public readonly maybeSent: boolean,
    public readonly cause?: unknown,
  ) {}
}

// Errors that prove the request never left this host: the connection was never established.
const NOT_SENT_CODES = new Set(['ECONNREFUSED', 'ENOTFOUND', 'EAI_AGAIN', 'UND_ERR_CONNECT_TIMEOUT', 'EHOSTUNREACH', 'ENETUNREACH']);

const errorCodes = (error: unknown): string[] => {
  const codes: string[] = [];
  let current: unknown = error;
  for (let depth = 0; current && depth < 5; depth += 1) {
    const code = (current as { code?: unknown }).code;
    if (typeof code === 'string') codes.push(code);
    // AggregateError (happy eyeballs) hides the connect errors in `errors`.
    const inner = (current as { errors?: unknown }).errors;
    if (Array.isArray(inner)) inner.forEach((e) => codes.push(...errorCodes(e)));
    current = (current as { cause?: unknown }).cause;
  }
  return codes;
};

/** Maps a non-zero result code to its typed domain error. */
export const errorForResultCode = (code: number, error: string | undefined, endpoint: string): MarketplaceError => {
  switch (code) {
    case ResultCode.DatabaseError:
      return new MarketplaceDatabaseError(`marketplace database error on ${endpoint}`);
    case ResultCode.InvalidInput:
      return new MarketplaceInvalidInputError(`marketplace rejected the input of ${endpoint}`);
    case ResultCode.InvalidApiKey:
      return new MarketplaceAuthError();
    case ResultCode.InvalidEndpoint:
      return new MarketplaceEndpointError(`marketplace endpoint ${endpoint} invalid`);
    case ResultCode.RateLimited:
      return new MarketplaceRateLimitedError();
    case ResultCode.SeeError:
      return new MarketplaceRejectedError(error ?? 'unknown');
    default:
      return new MarketplaceError(`marketplace answered unknown result code ${code} on ${endpoint}`, code);
  }
};

/** The marketplace client used in AWS and locally; wrap it in CachedMarketplaceClient for shared reads. */
export class HttpMarketplaceClient implements MarketplaceClient {
  private readonly baseUrl: string;
  private readonly minIntervalMs: number;
  private readonly timeoutMs: number;
  private readonly fetchFn: typeof fetch;
  private readonly sleep: (ms: number) => Promise<void>;
  private readonly now: () => number;
  private readonly random: () => number;
  private readonly maxRateLimitRetries: number;
  private readonly maxNetworkRetries: number;
  private readonly baseBackoffMs: number;
  private readonly maxBackoffMs: number;
  private readonly maxLatenessMs: number;

  public constructor(private readonly options: HttpMarketplaceClientOptions) {
    this.baseUrl = options.baseUrl.replace(/\/+$/, '');
    this.minIntervalMs = options.minIntervalMs ?? 1_000;
    this.timeoutMs = options.timeoutMs ?? 10_000;
    this.fetchFn = options.fetchFn ?? ((...args) => globalThis.fetch(...args));
    this.sleep = options.sleep ?? ((ms) => new Promise((resolve) => setTimeout(resolve, ms)));
    this.now = options.now ?? Date.now;
    this.random = options.random ?? Math.random;
    this.maxRateLimitRetries = options.maxRateLimitRetries ?? 4;
    this.maxNetworkRetries = options.maxNetworkRetries ?? 2;
    this.baseBackoffMs = options.baseBackoffMs ?? 1_000;
    this.maxBackoffMs = options.maxBackoffMs ?? 16_000;
    this.maxLatenessMs = options.maxLatenessMs ?? Math.min(100, Math.max(5, Math.ceil(this.minIntervalMs / 10)));
  }

  public async listServers(): Promise<readonly Server[]> {
    const res = await this.call({ endpoint: 'marketplace', method: 'GET', schema: MarketplaceResponseSchema });
    return res.servers;
  }

  public async listWallets(): Promise<readonly Wallet[]> {
    const res = await this.call({ endpoint: 'wallets', method: 'GET', schema: WalletsResponseSchema });
    return res.wallets;
  }

  public async createOrder(request: CreateOrderRequest): Promise<{ order_id: number | undefined }> {
    const body = validateOrderRequest(request);
    const res = await this.call({ endpoint: 'create_order', method: 'POST', schema: CreateOrderResponseSchema, body });
    return { order_id: res.order_id };
  }

  public async listOrders(options: { returnCompleted?: boolean } = {}): Promise<readonly Order[]> {
    const query = options.returnCompleted ? { return_completed: 'true' } : undefined;
    const res = await this.call({ endpoint: 'my_orders', method: 'GET', schema: MyOrdersResponseSchema, query });
    return res.orders;
  }

  public async cancelOrder(orderId: number): Promise<void> {
    await this.call({ endpoint: 'cancel_order', method: 'POST', schema: CancelOrderResponseSchema, body: { id: orderId } });
  }

  public async setSpotPrice(orderId: number, desiredPrice: number): Promise<void> {
    await this.call({
      endpoint: 'set_spot_price',
      method: 'POST',
      schema: SetSpotPriceResponseSchema,
      body: { order_id: orderId, desired_price: desiredPrice },
    });
  }

  public async spotMarket(serverId: number): Promise<unknown> {
    const res = await this.call({
      endpoint: 'spot_marketplace',
      method: 'GET',
      schema: SpotMarketResponseSchema,
      query: { market: String(serverId) },
    });
    return res.market;
  }

  /** Full jitter (AWS Architecture Blog, "Exponential Backoff And Jitter"): uniform in [0, cap). */
  private backoff(retry: number): number {
    return Math.floor(this.random() * Math.min(this.maxBackoffMs, this.baseBackoffMs * 2 ** retry));
  }

  /**
   * Waits for this caller's send slot. A slot is only good if used on time: when the gate itself
   * was slow and the slot has passed by more than `maxLatenessMs`, sending now could land right
   * before the next slot's request, so the slot is dropped (wasting it is safe) and another taken.
   * Slots are spaced `minIntervalMs + maxLatenessMs` apart, so sends are at least `minIntervalMs` apart.
   */
  private async pace(apiKey: string): Promise<void> {
    if (this.minIntervalMs <= 0) return;
    const keyId = this.options.keyId ?? apiKeyId(apiKey);
    for (let attempt = 0; ; attempt += 1) {
      const slot = await this.options.pacing.acquire(keyId, this.minIntervalMs + this.maxLatenessMs, this.now());
      const wait = slot - this.now();
      if (wait > 0) await this.sleep(wait);
      if (this.now() - slot <= this.maxLatenessMs || attempt >= MAX_LATE_SLOTS) return;
    }
  }

  private async call<S extends z.ZodType>(spec: CallSpec<S>): Promise<z.infer<S>> {
    const isCreate = spec.endpoint === 'create_order';
    let rateLimitRetries = 0;
    let networkRetries = 0;
    for (;;) {
      const apiKey = await this.options.apiKey();
      await this.pace(apiKey);
      const outcome = await this.send(spec, apiKey);

      if (outcome instanceof TransportFailure) {
        this.options.onError?.('network');
        if (spec.method === 'GET' && networkRetries < this.maxNetworkRetries) {
          await this.sleep(this.backoff(networkRetries));
          networkRetries += 1;
          continue;
        }
        if (isCreate && outcome.maybeSent) {
          throw new OrderOutcomeUnknownError(`create_order outcome unknown: ${outcome.message}`, { cause: outcome.cause });
        }
        throw new MarketplaceUnavailableError(`marketplace ${spec.endpoint}: ${outcome.message}`, { cause: outcome.cause });
      }

      const { code, error } = outcome.envelope;
      if (code === ResultCode.RateLimited) {
        this.options.onError?.(code);
        // Code 5 means the request was not processed, so even create_order may be sent again.
        if (rateLimitRetries < this.maxRateLimitRetries) {
          await this.sleep(this.backoff(rateLimitRetries));
          rateLimitRetries += 1;
          continue;
        }
        throw new MarketplaceRateLimitedError(`marketplace rate limit exceeded on ${spec.endpoint} after ${rateLimitRetries} retries`);
      }
      if (code !== ResultCode.Success) {
        this.options.onError?.(code);
        throw errorForResultCode(code, error, spec.endpoint);
      }

      const parsed = spec.schema.safeParse(outcome.body);
      if (!parsed.success) {
        this.options.onError?.('network');
        const where = parsed.error.issues.slice(0, 3).map((i) => `${i.path.join('.')}: ${i.message}`).join('; ');
        // A successful create_order whose answer we cannot read may well have rented the server.
        if (isCreate) throw new OrderOutcomeUnknownError(`create_order answer unreadable: ${where}`);
        throw new MarketplaceUnavailableError(`marketplace ${spec.endpoint} answer does not match the API: ${where}`);
      }
      return parsed.data;
    }
  }

  private async send(
    spec: CallSpec<z.ZodType>,
    apiKey: string,
  ): Promise<TransportFailure | { envelope: z.infer<typeof EnvelopeSchema>; body: unknown }> {
    const url = new URL(`${this.baseUrl}/v1/${spec.endpoint}`);
    for (const [name, value] of Object.entries(spec.query ?? {})) url.searchParams.set(name, value);
    const controller = new AbortController();
    const timer = setTimeout(() => controller.abort(), this.timeoutMs);
    let status: number;
    let text: string;
    try {
      const response = await this.fetchFn(url, {
        method: spec.method,
        headers: {
          auth: apiKey,
          accept: 'application/json',
          ...(spec.body === undefined ? {} : { 'content-type': 'application/json' }),
        },
        body: spec.body === undefined ? undefined : JSON.stringify(spec.body),
        signal: controller.signal,
      });
      status = response.status;
      text = await response.text();
    } catch (cause) {
      if (controller.signal.aborted) return new TransportFailure(`timed out after ${this.timeoutMs} ms`, true, cause);
      const codes = errorCodes(cause);
      const notSent = codes.some((c) => NOT_SENT_CODES.has(c));
      return new TransportFailure(`request failed (${codes[0] ?? 'network error'})`, !notSent, cause);
    } finally {
      clearTimeout(timer);
    }

    let body: unknown;
    try {
      body = JSON.parse(text);
    } catch (cause) {
      return new TransportFailure(status >= 500 ? `HTTP ${status}` : `unreadable answer (HTTP ${status})`, true, cause);
    }
    // The spec does not map results to HTTP statuses: a body with a result code is authoritative.
    const envelope = EnvelopeSchema.safeParse(body);
    if (!envelope.success) {
      return new TransportFailure(status >= 500 ? `HTTP ${status}` : `answer without a result code (HTTP ${status})`, true);
    }
    return { envelope: envelope.data, body };
  }
}
