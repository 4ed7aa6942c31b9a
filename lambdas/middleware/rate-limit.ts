/**
 * Per-address rate limit (order-relay.md §8): an exact rolling 60 s window per source address,
 * shared by every Lambda instance through the SlidingWindow port. It runs before the signature
 * check, so requests that fail the signature count too; only requests it rejects itself do not.
 */
import { RATE_WINDOW_MS } from '../../contract/retry-policy';
import { randomUUID } from 'node:crypto';
import type middy from '@middy/core';
import { keys } from '../../contract/resources';
import type { SlidingWindow } from '../domain/ports';
import { countMetric, logger, MetricName } from '../adapters/observability';
import { httpError, type RelayEvent } from './http';

export { RATE_WINDOW_MS };

export interface RateLimitOptions {
  /** The shared window store; a function so it is built lazily, on the first request. */
  readonly window: () => SlidingWindow;
  /** Requests per rolling 60 s per address (MAX_REQUESTS_PER_MINUTE). */
  readonly limit: number | (() => number);
  /** @default Date.now */
  readonly now?: () => number;
}

/**
 * 429 `{"error":"Rate limit exceeded"}` with Retry-After (whole seconds, rounded up) once an address
 * has `limit` counted requests in the last 60 s.
 *
 * The address is requestContext.http.sourceIp: API Gateway's view of the client. The middleware
 * never reads X-Forwarded-For itself (client-controlled); locally the gateway emulation puts the
 * TCP peer there, or, behind a proxy listed in TRUSTED_PROXIES, the client that proxy saw.
 *
 * Decision: when the window store fails, the request is refused (fail closed) with 503. An outage of
 * the table also stops the task records, so failing open would buy nothing but an unlimited window
 * for anyone able to provoke the failure.
 */
export const rateLimit = (options: RateLimitOptions): middy.MiddlewareObj<RelayEvent> => {
  const now = options.now ?? Date.now;
  const before: middy.MiddlewareFn<RelayEvent> = async ({ event }) => {
    const address = event.requestContext?.http?.sourceIp || 'unknown';
    const limit = typeof options.limit === 'function' ? options.limit() : options.limit;
    // The request id makes a retried invocation of the same request count once.
    const eventId = event.requestContext?.requestId || randomUUID();
    let outcome: { allowed: boolean; retryAfterMs: number };
    try {
      outcome = await options
        .window()
        .hit(keys.rate(address), { now: now(), windowMs: RATE_WINDOW_MS, limit, eventId });
    } catch (error) {
      logger.error('rate limiter unavailable; refusing the request', { error });
      throw httpError(503, 'Rate limiter unavailable; retry later', { 'Retry-After': '1' });
    }
    if (!outcome.allowed) {
      countMetric(MetricName.RateLimited);
      logger.info('rate limited', { sourceIp: address });
      const seconds = Math.max(1, Math.ceil(outcome.retryAfterMs / 1000));
      throw httpError(429, 'Rate limit exceeded', { 'Retry-After': String(seconds) });
    }
  };
  return { name: 'rateLimit', before };
};
