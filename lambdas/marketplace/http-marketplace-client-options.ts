/** The options of HttpMarketplaceClient (http-marketplace-client.ts). */
import type { PricePeriod } from '../../contract/settings';
import type { PacingGate, PacingWidening } from '../domain/ports';
import type { SkippedElement } from './reader';

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
  /**
   * A rate-limited answer doubles the shared interval up to this (PacingGate.rateLimited); at or
   * below `minIntervalMs`, the interval never widens. @default 10000
   */
  readonly maxIntervalMs?: number;
  /** The widened interval returns to `minIntervalMs` after this long without a rate-limited answer. @default 60000 */
  readonly quietMs?: number;
  /** Called when a rate-limited answer of this client widened the shared interval. */
  readonly onWidened?: (widening: PacingWidening & { readonly endpoint: string }) => void;
  /** Called when the gate could not record a rate-limited answer (the call goes on: its retry is paced as before). */
  readonly onPacingError?: (error: unknown) => void;
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
  /** Called once per answer that had list elements the reader could not use (they are left out of it). */
  readonly onSkipped?: (endpoint: string, skipped: readonly SkippedElement[]) => void;
  /** MARKETPLACE_PRICE_PERIOD: the period of `price.usd.*`. @default each listing element's dialect (reader.ts) */
  readonly pricePeriod?: PricePeriod;
  /** Spacing of create_order calls per API key, on top of `minIntervalMs` (production: 1 per 5 s). @default 5000 */
  readonly createIntervalMs?: number;
  /**
   * Time left in the current invocation (Lambda's `getRemainingTimeInMillis`). Each attempt's timeout,
   * each backoff and each create_order slot wait must fit in it minus `reserveMs`; what does not fit
   * is not started, and the call fails with the error it had (MarketplaceUnavailableError if none).
   * @default no budget
   */
  readonly remainingMs?: () => number;
  /** Time kept back from `remainingMs` for the caller to record the outcome. @default 3000 */
  readonly reserveMs?: number;
}
