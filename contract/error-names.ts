/**
 * Error names (Lambda `errorType`s) the state machine's Retry/Catch and the SQS worker agree on.
 * The classes that carry them live in lambdas/domain/errors.ts and set these literal names.
 */

/** Transient: retried with backoff by the workflow and the worker. */
export const TRANSIENT_ERROR_NAMES = [
  'MarketplaceDatabaseError',
  'MarketplaceRateLimitedError',
  'MarketplaceUnavailableError',
  'ConcurrentUpdateError',
] as const;

/**
 * Business outcomes: retrying cannot change them, so neither the workflow nor the worker retries
 * them (order-relay.md §3 retries every other exception, 3 times, 2^n s apart).
 * OrderOutcomeUnknownError is NOT one: a retried PlaceOrder reconciles through my_orders first.
 */
export const BUSINESS_ERROR_NAMES = [
  'NoServerAvailableError',
  'QuotaExceededError',
  'SoftTimeoutError',
  'MarketplaceRejectedError',
  'MarketplaceInvalidInputError',
  'MarketplaceAuthError',
  'InvalidOrderRequestError',
  'OrderNotVisibleError',
  'BudgetExceededError',
] as const;
