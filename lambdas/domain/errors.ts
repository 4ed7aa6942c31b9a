/**
 * Domain errors. Every class sets a literal `name`: it becomes Lambda's `errorType`, which the
 * state machine matches in Retry/Catch `ErrorEquals`, and it survives minification.
 */
import { BUSINESS_ERROR_NAMES, TRANSIENT_ERROR_NAMES } from '../../contract/error-names';
import { SOFT_TIME_LIMIT_SECONDS } from '../../contract/limits';
import type { RejectionReason } from './marketplace-types';

/**
 * The base of an error class that takes only its message, named `name`: a literal, since the class's
 * own name does not survive minification. Marked free of side effects, like resultCodeError below, so
 * that a bundle keeps only the error classes it uses.
 */
const namedError = /* @__NO_SIDE_EFFECTS__ */ (name: string) =>
  class extends Error {
    public constructor(message: string) {
      super(message);
      this.name = name;
    }
  };

/** Base of every marketplace failure. `code` is the marketplace result code when there was one. */
export class MarketplaceError extends Error {
  public readonly code: number | undefined;
  public constructor(message: string, code?: number, options?: { cause?: unknown }) {
    super(message, options);
    this.name = 'MarketplaceError';
    this.code = code;
  }
}

/** Marketplace result codes 1–5: the code each error class stands for, and its message when none is given. */
const RESULT_CODES = {
  MarketplaceDatabaseError: { code: 1, message: 'marketplace database error' },
  MarketplaceInvalidInputError: { code: 2, message: 'marketplace rejected the input' },
  MarketplaceAuthError: { code: 3, message: 'marketplace API key missing or invalid' },
  MarketplaceEndpointError: { code: 4, message: 'marketplace endpoint invalid' },
  MarketplaceRateLimitedError: { code: 5, message: 'marketplace rate limit exceeded' },
} as const;

/** The base of the error class of a result code in RESULT_CODES, named as its key there. */
const resultCodeError = /* @__NO_SIDE_EFFECTS__ */ (name: keyof typeof RESULT_CODES) =>
  class extends MarketplaceError {
    public constructor(message: string = RESULT_CODES[name].message) {
      super(message, RESULT_CODES[name].code);
      this.name = name;
    }
  };

/** Code 1: database error on the marketplace side. Transient. */
export class MarketplaceDatabaseError extends resultCodeError('MarketplaceDatabaseError') {}

/** Code 2: the marketplace rejected our input. Not transient. */
export class MarketplaceInvalidInputError extends resultCodeError('MarketplaceInvalidInputError') {}

/** Code 3: API key missing or invalid. Not transient: the operator must fix the key. */
export class MarketplaceAuthError extends resultCodeError('MarketplaceAuthError') {}

/** Code 4: invalid endpoint. A bug or an API change. */
export class MarketplaceEndpointError extends resultCodeError('MarketplaceEndpointError') {}

/** Code 5: rate limited, after the client's own backoff was exhausted. Transient. */
export class MarketplaceRateLimitedError extends resultCodeError('MarketplaceRateLimitedError') {}

/** Numbers the marketplace sends with some code-6 reasons (production: marketplace-live.md). */
export interface RejectionDetails {
  /** too_low_price: the lowest acceptable price. */
  readonly min_price?: number;
  /** exceeded_max_step: the largest allowed decrease. */
  readonly max_step?: number;
  /** can_lower_every_600_seconds: seconds until a decrease is allowed again. */
  readonly time_to_lowering?: number;
}

const describeDetails = (details: RejectionDetails): string => {
  const parts = (['min_price', 'max_step', 'time_to_lowering'] as const)
    .filter((k) => typeof details[k] === 'number')
    .map((k) => `${k} ${details[k]}`);
  return parts.length ? ` (${parts.join(', ')})` : '';
};

/** Code 6: a business rejection with one of the typed reasons, and the numbers that came with it. */
export class MarketplaceRejectedError extends MarketplaceError {
  public readonly reason: RejectionReason | string;
  public readonly details: RejectionDetails;
  public constructor(reason: RejectionReason | string, details: RejectionDetails = {}) {
    super(`marketplace rejected the request: ${reason}${describeDetails(details)}`, 6);
    this.name = 'MarketplaceRejectedError';
    this.reason = reason;
    this.details = details;
  }
}

/** Network failure, timeout, HTTP 5xx or an unreadable body. Transient. */
export class MarketplaceUnavailableError extends MarketplaceError {
  public constructor(message: string, options?: { cause?: unknown }) {
    super(message, undefined, options);
    this.name = 'MarketplaceUnavailableError';
  }
}

/**
 * create_order was sent but its outcome is unknown (timeout after sending, connection reset,
 * unreadable answer). Never retried blindly: the caller reconciles through my_orders.
 */
export class OrderOutcomeUnknownError extends MarketplaceError {
  public constructor(message: string, options?: { cause?: unknown }) {
    super(message, undefined, options);
    this.name = 'OrderOutcomeUnknownError';
  }
}

/**
 * create_order was accepted (code 0) without an order id, and the order did not appear in my_orders
 * within ORDER_VISIBLE_TIMEOUT_SECONDS. A business outcome: a retry must not place a second order;
 * the fleet watch cancels the order if it appears later (nobody kept it).
 */
export class OrderNotVisibleError extends namedError('OrderNotVisibleError') {}

/** A create_order request that fails our own checks before it is sent. */
export class InvalidOrderRequestError extends namedError('InvalidOrderRequestError') {}

/** No server matches the request. Business failure, ends the task. */
export class NoServerAvailableError extends namedError('NoServerAvailableError') {}

/** The account-wide hourly order cap is reached. Business failure, ends the task. */
export class QuotaExceededError extends Error {
  /**
   * `key`: a caller key's own `orders_per_hour` (issue 24), rather than the account-wide cap.
   * `retryAfterMs`: when the window has room again (a standing order waits that long, issue 23).
   */
  public constructor(
    limit: number,
    key?: string,
    public readonly retryAfterMs?: number,
  ) {
    super(
      key === undefined
        ? `Hourly order limit reached (${limit} per hour)`
        : `Hourly order limit of key ${key} reached (${limit} per hour)`,
    );
    this.name = 'QuotaExceededError';
  }
}

/** A spending budget (SPEND_LIMIT_USD_PER_DAY or a caller key's) cannot take the order's worst case (issue 24). */
export class BudgetExceededError extends namedError('BudgetExceededError') {}

/** The task passed its soft time limit (SOFT_TIME_LIMIT_SECONDS). */
export class SoftTimeoutError extends Error {
  public constructor(message = `Task exceeded its soft time limit of ${SOFT_TIME_LIMIT_SECONDS} s`) {
    super(message);
    this.name = 'SoftTimeoutError';
  }
}

/** A write lost a conditional race (optimistic concurrency); safe to retry. */
export class ConcurrentUpdateError extends namedError('ConcurrentUpdateError') {}

/** The user-facing text of a failed hand-off (HTTP 503). */
export const HAND_OFF_FAILED_MESSAGE = 'Could not queue the task; nothing was started. Retry later.';

/** Recording or handing off the task failed; nothing was started. The API answers 503. */
export class HandOffError extends Error {
  public constructor(options?: { cause?: unknown }) {
    super(HAND_OFF_FAILED_MESSAGE, options);
    this.name = 'HandOffError';
  }
}

/** What a caller is told instead of an AWS service's own error text (issue 29 §5). */
export const INTERNAL_ERROR_TEXT = 'Internal error';

/**
 * The text a caller may see for an error named `name`: its message, unless it is an AWS service's
 * exception (the SDK names them `…Exception`; the relay's own errors end in `Error`), whose text
 * (table names, item sizes, ARNs) never reaches a caller: INTERNAL_ERROR_TEXT instead.
 */
export const callerSafeText = (name: string | undefined, message: string): string =>
  name !== undefined && /Exception$/.test(name) ? INTERNAL_ERROR_TEXT : message;

/**
 * A standing order over a cap of the waiting queue (issue 29 §5: MAX_WAITING_TASKS_PER_KEY or
 * MAX_WAITING_TASKS); nothing was queued. The API answers 429 with the message.
 */
export class WaitingQueueFullError extends namedError('WaitingQueueFullError') {}

/** A task record `create` found with the same id. Not transient: the id is already taken. */
export class TaskAlreadyExistsError extends Error {
  public constructor(taskId: string) {
    super(`task ${taskId} already exists`);
    this.name = 'TaskAlreadyExistsError';
  }
}

/** A job message body that is not a valid JobMessage. Never succeeds, so it ends in the DLQ. */
export class InvalidJobMessageError extends namedError('InvalidJobMessageError') {}

/** The workflow state document failed validation: a bug or a hand-started execution. Not transient. */
export class InvalidWorkflowInputError extends namedError('InvalidWorkflowInputError') {}

/** An outbound POST got no complete response (connect, headers and body) within its total timeout. Retryable. */
export class DeliveryTimeoutError extends Error {
  public constructor(timeoutMs: number) {
    super(`no complete response within ${timeoutMs} ms`);
    this.name = 'DeliveryTimeoutError';
  }
}

/** A destination the SSRF policy refuses (private, loopback, link-local... or not http(s)). Never retried. */
export class BlockedDestinationError extends namedError('BlockedDestinationError') {}

/**
 * The classes behind the contract's name lists. Step Functions matches the names across processes
 * (Retry/Catch); in-process checks match these classes (`instanceof`). A unit test keeps both equal.
 */
export const TRANSIENT_ERRORS = [
  MarketplaceDatabaseError,
  MarketplaceRateLimitedError,
  MarketplaceUnavailableError,
  ConcurrentUpdateError,
] as const;
export const BUSINESS_ERRORS = [
  NoServerAvailableError,
  QuotaExceededError,
  SoftTimeoutError,
  MarketplaceRejectedError,
  MarketplaceInvalidInputError,
  MarketplaceAuthError,
  InvalidOrderRequestError,
  OrderNotVisibleError,
  BudgetExceededError,
] as const;

export { TRANSIENT_ERROR_NAMES };

export const isTransient = (error: unknown): boolean => TRANSIENT_ERRORS.some((type) => error instanceof type);

export { BUSINESS_ERROR_NAMES };

/** True for a business outcome (never retried); any other exception is retried. */
export const isBusinessOutcome = (error: unknown): boolean => BUSINESS_ERRORS.some((type) => error instanceof type);

/**
 * Failures a caller's request causes (the 4xx family): the relay or the marketplace cannot serve it as
 * asked (an order that is not the account's, a price under the floor, no matching server, a cap or a
 * budget reached). The logs say WARN without a stack; every other failure is a fault (ERROR with its
 * stack): the operator's to fix (the API key, the account's balance), the relay's or the marketplace's.
 */
const CALLER_ERRORS = [
  InvalidOrderRequestError,
  MarketplaceInvalidInputError,
  MarketplaceRejectedError,
  NoServerAvailableError,
  QuotaExceededError,
  BudgetExceededError,
  WaitingQueueFullError,
] as const;

/** True for a failure the caller's request caused (see CALLER_ERRORS); false for a fault. */
export const isCallerError = (error: unknown): boolean =>
  error instanceof MarketplaceRejectedError
    ? error.reason !== 'not_enough_balance' // the account's balance is the operator's to fix
    : CALLER_ERRORS.some((type) => error instanceof type);
