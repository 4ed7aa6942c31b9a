/**
 * The marketplace over HTTP, in both dialects (marketplace-api.md and marketplace-live.md): all 7
 * endpoints, the `auth` header, an explicit User-Agent and a timeout on every call, shared pacing per
 * API key (create_order in its own 5 s lane) that widens after rate-limited answers, result codes and
 * production's HTTP statuses as typed domain errors (marketplace-failures.ts), full-jitter backoff on
 * code 5 / HTTP 429, network retries only for reads, a create_order that is never retried blindly, and
 * a time budget taken from the Lambda invocation. Its options: http-marketplace-client-options.ts.
 */
import type * as z from 'zod/mini';
import { ENGLISH_TEXTS } from '../domain/zod-texts';
import { MarketplaceRateLimitedError, MarketplaceUnavailableError, OrderOutcomeUnknownError } from '../domain/errors';
import type { CreateOrderRequest, Order, Server, Wallet } from '../domain/marketplace-types';
import type { AdaptivePacingPolicy, MarketplaceClient, PacingLaneRequest } from '../domain/ports';
import { version } from '../../package.json';
import type { HttpMarketplaceClientOptions } from './http-marketplace-client-options';
import { apiKeyId } from './key-id';
import { errorCodes, errorForResultCode, NOT_SENT_CODES, TransportFailure } from './marketplace-failures';
import { readOrders, readServers } from './reader';
import {
  CancelOrderResponseSchema,
  CreateOrderResponseSchema,
  EnvelopeSchema,
  type Envelope,
  MarketplaceResponseSchema,
  MyOrdersResponseSchema,
  ResultCode,
  SetSpotPriceResponseSchema,
  SpotMarketResponseSchema,
  WalletsResponseSchema,
} from './schemas';
import { validateOrderRequest } from './validate-order';

export type { HttpMarketplaceClientOptions } from './http-marketplace-client-options';

/** Sent on every request: some CDNs answer default user agents with HTTP 403 (marketplace-live.md). */
export const USER_AGENT = `gpu-order-relay/${version}`;

/** The shortest attempt worth starting when the budget is short. */
const MIN_ATTEMPT_MS = 1_000;

type Method = 'GET' | 'POST';

/** The pacing lane of create_order. */
const CREATE_LANE = 'create_order';

/** Late slots dropped before sending anyway (a gate that is always slow must not stall calls). */
const MAX_LATE_SLOTS = 3;

/** Slots voided by widenings before sending anyway (each void means the interval just doubled: rare). */
const MAX_VOIDED_SLOTS = 3;

interface CallSpec<S extends z.ZodMiniType> {
  readonly endpoint: string;
  readonly method: Method;
  readonly schema: S;
  readonly query?: Record<string, string>;
  readonly body?: unknown;
}

/** The marketplace client used in AWS and locally; wrap it in CachedMarketplaceClient for shared reads. */
export class HttpMarketplaceClient implements MarketplaceClient {
  private readonly baseUrl: string;
  private readonly minIntervalMs: number;
  /** Undefined: the interval never widens (no pacing, or a cap at or below the minimum). */
  private readonly adaptive: AdaptivePacingPolicy | undefined;
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
  private readonly createIntervalMs: number;
  private readonly reserveMs: number;

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
    this.createIntervalMs = options.createIntervalMs ?? 5_000;
    this.reserveMs = options.reserveMs ?? 3_000;
    const maxIntervalMs = options.maxIntervalMs ?? 10_000;
    this.adaptive =
      this.minIntervalMs > 0 && maxIntervalMs > this.minIntervalMs
        ? { minIntervalMs: this.minIntervalMs, maxIntervalMs, quietMs: options.quietMs ?? 60_000 }
        : undefined;
  }

  public async listServers(): Promise<readonly Server[]> {
    const res = await this.call({ endpoint: 'marketplace', method: 'GET', schema: MarketplaceResponseSchema() });
    const { items, skipped } = readServers(res.servers, { pricePeriod: this.options.pricePeriod });
    if (skipped.length) this.options.onSkipped?.('marketplace', skipped);
    return items;
  }

  public async listWallets(): Promise<readonly Wallet[]> {
    const res = await this.call({ endpoint: 'wallets', method: 'GET', schema: WalletsResponseSchema() });
    return res.wallets;
  }

  public async createOrder(request: CreateOrderRequest): Promise<{ order_id: number | undefined }> {
    const body = validateOrderRequest(request);
    const res = await this.call({
      endpoint: 'create_order',
      method: 'POST',
      schema: CreateOrderResponseSchema(),
      body,
    });
    return { order_id: res.order_id };
  }

  public async listOrders(options: { returnCompleted?: boolean } = {}): Promise<readonly Order[]> {
    const query = options.returnCompleted ? { return_completed: 'true' } : undefined;
    const res = await this.call({ endpoint: 'my_orders', method: 'GET', schema: MyOrdersResponseSchema(), query });
    const { items, skipped } = readOrders(res.orders);
    if (skipped.length) this.options.onSkipped?.('my_orders', skipped);
    return items;
  }

  public async cancelOrder(orderId: number): Promise<void> {
    await this.call({
      endpoint: 'cancel_order',
      method: 'POST',
      schema: CancelOrderResponseSchema(),
      body: { id: orderId },
    });
  }

  public async setSpotPrice(orderId: number, desiredPrice: number): Promise<void> {
    await this.call({
      endpoint: 'set_spot_price',
      method: 'POST',
      schema: SetSpotPriceResponseSchema(),
      body: { order_id: orderId, desired_price: desiredPrice },
    });
  }

  public async spotMarket(serverId: number): Promise<unknown> {
    const res = await this.call({
      endpoint: 'spot_marketplace',
      method: 'GET',
      schema: SpotMarketResponseSchema(),
      query: { market: String(serverId) },
    });
    return res.market;
  }

  /** Full jitter (AWS Architecture Blog, "Exponential Backoff And Jitter"): uniform in [0, cap). */
  private backoff(retry: number): number {
    return Math.floor(this.random() * Math.min(this.maxBackoffMs, this.baseBackoffMs * 2 ** retry));
  }

  /** Milliseconds this call may still spend, or Infinity without a budget. */
  private budget(): number {
    return this.options.remainingMs ? this.options.remainingMs() - this.reserveMs : Number.POSITIVE_INFINITY;
  }

  /** Whether waiting `waitMs` and then one attempt of at least MIN_ATTEMPT_MS still fits the budget. */
  private fits(waitMs: number): boolean {
    return waitMs + MIN_ATTEMPT_MS <= this.budget();
  }

  /**
   * Waits for this caller's send slot. A slot is only good if used on time: when the gate itself
   * was slow and the slot has passed by more than `maxLatenessMs`, sending now could land right
   * before the next slot's request, so the slot is dropped (wasting it is safe) and another taken.
   * Slots are spaced `minIntervalMs + maxLatenessMs` apart, so sends are at least `minIntervalMs` apart;
   * create_order slots are also `createIntervalMs + maxLatenessMs` apart from each other. A slot
   * further ahead than the budget allows is not used (MarketplaceRateLimitedError: try later; a create
   * slot is not even taken). A slot that waited is checked against the key's last widening: one
   * claimed at or before it was spaced at the old interval, so it is void and another is claimed.
   */
  private async pace(apiKey: string, inCreateLane: boolean, endpoint: string): Promise<void> {
    if (this.minIntervalMs <= 0 && (!inCreateLane || this.createIntervalMs <= 0)) return;
    const keyId = this.keyIdOf(apiKey);
    const interval = this.spacingMs();
    let late = 0;
    let voided = 0;
    for (;;) {
      let slot: number;
      const claimedAt = this.now();
      if (inCreateLane) {
        const maxWaitMs = Math.max(0, this.budget() - MIN_ATTEMPT_MS);
        const lane: PacingLaneRequest = {
          ...this.createLane(),
          ...(Number.isFinite(maxWaitMs) ? { maxWaitMs } : {}),
        };
        const claimed = await this.options.pacing.acquireInLane(keyId, interval, claimedAt, lane);
        if (claimed === undefined) {
          throw new MarketplaceRateLimitedError(
            `create_order: no send slot within this invocation's remaining ${Math.round(maxWaitMs)} ms`,
          );
        }
        slot = claimed;
      } else {
        slot = await this.options.pacing.acquire(keyId, interval, claimedAt);
      }
      const wait = slot - this.now();
      if (wait > 0 && !this.fits(wait)) {
        throw new MarketplaceRateLimitedError(
          `${endpoint}: no send slot within this invocation's remaining ${Math.round(this.budget())} ms`,
        );
      }
      if (wait > 0) await this.sleep(wait);
      if (this.adaptive && slot > claimedAt && voided < MAX_VOIDED_SLOTS) {
        const widenedAt = await this.options.pacing.widenedAt(keyId);
        // At or before: a claim in the same millisecond as the widening may have been handed out before
        // it, on the old timeline (claiming again then costs one slot, voiding nothing that was sent).
        if (widenedAt !== undefined && widenedAt >= claimedAt) {
          voided += 1;
          continue;
        }
      }
      if (this.now() - slot <= this.maxLatenessMs || late >= MAX_LATE_SLOTS) return;
      late += 1;
    }
  }

  private keyIdOf(apiKey: string): string {
    return this.options.keyId ?? apiKeyId(apiKey);
  }

  /** The spacing this client asks the gate for: its minimum interval plus the lateness margin. */
  private spacingMs(): number {
    return Math.max(this.minIntervalMs, 0) + this.maxLatenessMs;
  }

  private createLane(): PacingLaneRequest {
    return { name: CREATE_LANE, spacingMs: this.createIntervalMs + this.maxLatenessMs };
  }

  /**
   * Reports a rate-limited answer to the shared gate, which may widen the interval for every caller.
   * Never fails the call: a gate that cannot record it leaves the interval as it was (the retry
   * backs off anyway).
   */
  private async reportRateLimited(apiKey: string, endpoint: string, sentAt: number): Promise<void> {
    if (!this.adaptive) return;
    try {
      const widening = await this.options.pacing.rateLimited(this.keyIdOf(apiKey), this.spacingMs(), this.now(), {
        sentAt,
        policy: this.adaptive,
        lanes: [this.createLane()],
      });
      if (widening.widened) this.options.onWidened?.({ endpoint, ...widening });
    } catch (error) {
      this.options.onPacingError?.(error);
    }
  }

  private async call<S extends z.ZodMiniType>(spec: CallSpec<S>): Promise<z.infer<S>> {
    const isCreate = spec.endpoint === 'create_order';
    let rateLimitRetries = 0;
    let networkRetries = 0;
    for (;;) {
      if (!this.fits(0)) {
        throw new MarketplaceUnavailableError(
          `marketplace ${spec.endpoint}: not started, the invocation has too little time left`,
        );
      }
      const apiKey = await this.options.apiKey();
      await this.pace(apiKey, isCreate, spec.endpoint);
      const sentAt = this.now();
      const timeoutMs = Math.max(MIN_ATTEMPT_MS, Math.min(this.timeoutMs, this.budget()));
      const outcome = await this.send(spec, apiKey, timeoutMs);

      if (outcome instanceof TransportFailure) {
        this.options.onError?.('network');
        if (spec.method === 'GET' && networkRetries < this.maxNetworkRetries) {
          const delay = this.backoff(networkRetries);
          if (this.fits(delay)) {
            await this.sleep(delay);
            networkRetries += 1;
            continue;
          }
        }
        if (isCreate && outcome.maybeSent) {
          throw new OrderOutcomeUnknownError(`create_order outcome unknown: ${outcome.message}`, {
            cause: outcome.cause,
          });
        }
        throw new MarketplaceUnavailableError(`marketplace ${spec.endpoint}: ${outcome.message}`, {
          cause: outcome.cause,
        });
      }

      const { envelope } = outcome;
      if (envelope.code === ResultCode.RateLimited) {
        this.options.onError?.(envelope.code);
        await this.reportRateLimited(apiKey, spec.endpoint, sentAt);
        // Code 5 (or HTTP 429) means the request was not processed, so even create_order may be sent again.
        const delay = this.backoff(rateLimitRetries);
        if (rateLimitRetries < this.maxRateLimitRetries && this.fits(delay)) {
          await this.sleep(delay);
          rateLimitRetries += 1;
          continue;
        }
        throw new MarketplaceRateLimitedError(
          `marketplace rate limit exceeded on ${spec.endpoint} after ${rateLimitRetries} retries`,
        );
      }
      if (envelope.code !== ResultCode.Success) {
        this.options.onError?.(envelope.code);
        throw errorForResultCode(envelope.code, envelope.error, spec.endpoint, envelope);
      }

      const parsed = spec.schema.safeParse(outcome.body, ENGLISH_TEXTS);
      if (!parsed.success) {
        this.options.onError?.('network');
        const where = parsed.error.issues
          .slice(0, 3)
          .map((i) => `${i.path.join('.')}: ${i.message}`)
          .join('; ');
        // A successful create_order whose answer we cannot read may well have rented the server.
        if (isCreate) throw new OrderOutcomeUnknownError(`create_order answer unreadable: ${where}`);
        throw new MarketplaceUnavailableError(`marketplace ${spec.endpoint} answer does not match the API: ${where}`);
      }
      return parsed.data;
    }
  }

  private async send(
    spec: CallSpec<z.ZodMiniType>,
    apiKey: string,
    timeoutMs: number,
  ): Promise<TransportFailure | { envelope: Envelope; body: unknown }> {
    const url = new URL(`${this.baseUrl}/v1/${spec.endpoint}`);
    for (const [name, value] of Object.entries(spec.query ?? {})) url.searchParams.set(name, value);
    const controller = new AbortController();
    const timer = setTimeout(() => controller.abort(), timeoutMs);
    let status: number;
    let text: string;
    try {
      const response = await this.fetchFn(url, {
        method: spec.method,
        headers: {
          auth: apiKey,
          accept: 'application/json',
          'user-agent': USER_AGENT,
          ...(spec.body === undefined ? {} : { 'content-type': 'application/json' }),
        },
        body: spec.body === undefined ? undefined : JSON.stringify(spec.body),
        signal: controller.signal,
      });
      status = response.status;
      text = await response.text();
    } catch (cause) {
      if (controller.signal.aborted) return new TransportFailure(`timed out after ${timeoutMs} ms`, true, cause);
      const codes = errorCodes(cause);
      const notSent = codes.some((c) => NOT_SENT_CODES.has(c));
      return new TransportFailure(`request failed (${codes[0] ?? 'network error'})`, !notSent, cause);
    } finally {
      clearTimeout(timer);
    }

    // Production's statuses (marketplace-live.md): 401 is a bad key and 429 a rate limit, whatever
    // the body says (it may carry code 3 or 5, or nothing readable); neither request was processed.
    if (status === 401) return { envelope: { code: ResultCode.InvalidApiKey }, body: undefined };
    if (status === 429) return { envelope: { code: ResultCode.RateLimited }, body: undefined };

    let body: unknown;
    try {
      body = JSON.parse(text);
    } catch (cause) {
      return this.failureWithoutCode(status, cause);
    }
    // A body with a result code is authoritative whatever the HTTP status (the spec maps none).
    const envelope = EnvelopeSchema().safeParse(body);
    if (!envelope.success) return this.failureWithoutCode(status);
    return { envelope: envelope.data, body };
  }

  /**
   * An answer without a result code. A 4xx was refused before any processing (a CDN's 403 on a
   * default user agent, say); a 5xx or an unreadable 2xx may have been processed.
   */
  private failureWithoutCode(status: number, cause?: unknown): TransportFailure {
    if (status >= 400 && status < 500)
      return new TransportFailure(`HTTP ${status} without a result code`, false, cause);
    if (status >= 500) return new TransportFailure(`HTTP ${status} without a result code`, true, cause);
    return new TransportFailure(`unreadable answer (HTTP ${status})`, true, cause);
  }
}
