import {
  BUSINESS_ERROR_NAMES,
  InvalidOrderRequestError,
  MarketplaceAuthError,
  MarketplaceDatabaseError,
  MarketplaceEndpointError,
  MarketplaceError,
  MarketplaceInvalidInputError,
  MarketplaceRejectedError,
  MarketplaceUnavailableError,
  NoServerAvailableError,
  OrderOutcomeUnknownError,
  QuotaExceededError,
  SoftTimeoutError,
} from '../../../lambdas/domain/errors';
import { isRetryable } from '../../../lambdas/domain/requests/jobs';
import { NOT_RETRIED_ERRORS } from '../../../lib/constructs/order-workflow';

describe('Retry policy: every exception but a named business outcome (order-relay.md §3)', () => {
  it.each([
    new NoServerAvailableError('No z9000 available'),
    new QuotaExceededError(10),
    new SoftTimeoutError(),
    new MarketplaceRejectedError('insufficient-funds'),
    new MarketplaceInvalidInputError(),
    new MarketplaceAuthError(),
    new InvalidOrderRequestError('bad ports'),
  ])('does not retry the business outcome %s', (error) => {
    expect(isRetryable(error)).toBe(false);
    expect(BUSINESS_ERROR_NAMES).toContain(error.name);
  });

  it.each([
    new TypeError('Cannot read properties of undefined'),
    new Error('something unexpected'),
    new MarketplaceError('unknown result code 9', 9),
    new MarketplaceEndpointError(),
    new MarketplaceUnavailableError('timed out'),
    new MarketplaceDatabaseError(),
    // A retried placement reconciles through my_orders before it places again.
    new OrderOutcomeUnknownError('create_order outcome unknown'),
    Object.assign(new Error('Task timed out after 30.00 seconds'), { name: 'Sandbox.Timedout' }),
  ])('retries %s', (error) => {
    expect(isRetryable(error)).toBe(true);
  });

  it('uses the same business list on the workflow and worker paths', () => {
    for (const name of BUSINESS_ERROR_NAMES) expect(NOT_RETRIED_ERRORS).toContain(name);
    expect(NOT_RETRIED_ERRORS.filter((n) => !(BUSINESS_ERROR_NAMES as readonly string[]).includes(n))).toEqual([
      'InvalidWorkflowInputError',
    ]);
  });
});
