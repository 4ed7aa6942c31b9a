/**
 * The marketplace client every handler uses, built from the env contract: HTTP client paced through
 * DynamoDB, behind the shared DynamoDB read cache. Build it once per cold start.
 */
import { isPricePeriod } from '../../contract/settings';
import type { MarketplaceClient } from '../domain/ports';
import { CachedMarketplaceClient } from '../marketplace/cached-marketplace-client';
import { HttpMarketplaceClient } from '../marketplace/http-marketplace-client';
import { documentClient } from './aws-clients';
import { DynamoDbPacingGate } from './dynamodb/dynamodb-pacing-gate';
import { DynamoDbReadCache } from './dynamodb/dynamodb-read-cache';
import type { RelayEnv } from './env';
import { remainingMs } from './invocation-budget';
import { countMetric, logger, MetricName } from './observability';
import { marketplaceApiKey } from './secrets';

/**
 * Retry limits and back-off of the deployed client, stated here (not left to the client's defaults)
 * so the time-budget test (test/unit/time-budgets.test.ts) sums the same numbers the code uses.
 */
export const MARKETPLACE_CLIENT_LIMITS = {
  maxNetworkRetries: 2,
  maxRateLimitRetries: 4,
  baseBackoffMs: 1_000,
  maxBackoffMs: 16_000,
} as const;

/**
 * Kept back from the client's budget for the caller's own answer after the client gives up (the
 * summary's JSON 500, a step's error result); the client keeps its own safety reserve on top.
 */
export const MARKETPLACE_ANSWER_RESERVE_MS = 1_000;

/** The invocation's remaining time as the marketplace client may spend it. */
export const marketplaceRemainingMs = (): number => remainingMs() - MARKETPLACE_ANSWER_RESERVE_MS;

/**
 * Builds the cached, paced marketplace client on the shared, traced DynamoDB client (pacing and
 * read-cache calls appear in X-Ray). `cacheMaxAgeMs` defaults to the readiness poll interval.
 */
export const marketplaceFromEnv = (env: RelayEnv, options: { cacheMaxAgeMs?: number } = {}): MarketplaceClient => {
  const db = documentClient();
  const http = new HttpMarketplaceClient({
    baseUrl: env.MARKETPLACE_URL,
    apiKey: () => marketplaceApiKey(env),
    pacing: new DynamoDbPacingGate(db, env.TABLE_NAME),
    minIntervalMs: env.MARKETPLACE_MIN_INTERVAL_MS,
    maxIntervalMs: env.MARKETPLACE_MAX_INTERVAL_MS,
    createIntervalMs: env.MARKETPLACE_CREATE_INTERVAL_MS,
    timeoutMs: env.MARKETPLACE_TIMEOUT_MS,
    // Validated by the env schema (hour | day); unset = each listing element's dialect decides.
    ...(isPricePeriod(env.MARKETPLACE_PRICE_PERIOD) ? { pricePeriod: env.MARKETPLACE_PRICE_PERIOD } : {}),
    ...MARKETPLACE_CLIENT_LIMITS,
    // Each attempt's timeout is capped and retries skipped so the client gives up
    // (MarketplaceUnavailableError) before the invocation runs out of time.
    remainingMs: marketplaceRemainingMs,
    onError: (code) => countMetric(MetricName.MarketplaceErrors, { name: 'ResultCode', value: String(code) }),
    // Every instance paces at the widened interval until a quiet minute passes; the operator sees each step.
    onWidened: ({ endpoint, previousMs, intervalMs }) => {
      logger.warn('marketplace pacing interval widened', { endpoint, previousMs, intervalMs });
      countMetric(MetricName.MarketplaceIntervalWidened);
    },
    onPacingError: (error) => logger.warn('marketplace pacing: rate-limited answer not recorded', { error }),
    // An element the reader cannot use is left out, never the whole answer: one line per answer with
    // the count per reason. Servers without GPUs are ordinary listings (INFO); anything else is WARN.
    onSkipped: (endpoint, skipped) => {
      const reasons: Record<string, number> = {};
      for (const s of skipped) reasons[s.reason] = (reasons[s.reason] ?? 0) + 1;
      const ordinary = skipped.every((s) => s.reason.startsWith('no GPU names'));
      (ordinary ? logger.info : logger.warn).call(logger, 'marketplace answer elements skipped', {
        endpoint,
        count: skipped.length,
        reasons,
        indexes: skipped.slice(0, 20).map((s) => s.index),
      });
    },
  });
  return new CachedMarketplaceClient({
    inner: http,
    cache: new DynamoDbReadCache(db, env.TABLE_NAME),
    maxAgeMs: options.cacheMaxAgeMs ?? env.ORDER_POLL_INTERVAL_SECONDS * 1000,
    // A cache outage costs extra marketplace reads, never a failed task.
    onCacheError: (error) => logger.warn('marketplace read cache unavailable', { error }),
  });
};
