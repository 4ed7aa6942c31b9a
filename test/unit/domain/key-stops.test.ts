/**
 * Issue 29: what a revoked or expired key stops (§4), and that no AWS service's own error text
 * reaches a caller (§5: DynamoDB's "Item size to update has exceeded the maximum allowed size").
 */
import { keyCheckOf, keyStoppedText, type CallerKeyRecord } from '../../../lambdas/domain/teams/caller-keys';
import { callerSafeText, INTERNAL_ERROR_TEXT } from '../../../lambdas/domain/errors';
import { errorText } from '../../../lambdas/domain/requests/jobs';
import { caughtErrorText } from '../../../lambdas/handlers/workflow/shared';

const NOW = 1_800_000_000;
const key = (name: string, over: Partial<CallerKeyRecord> = {}): CallerKeyRecord => ({
  name,
  scopes: ['order'],
  secret: 'v1.x.y.z',
  created_at: NOW - 100,
  ...over,
});

describe('Function: keyStoppedText', () => {
  const records = [key('ci'), key('temp', { revoked_at: NOW - 1 }), key('old', { expires_at: NOW })];
  it('names a revoked, deleted or expired key, and nothing for a usable one', () => {
    expect(keyStoppedText('temp', records, NOW)).toBe('key temp revoked');
    expect(keyStoppedText('gone', records, NOW)).toBe('key gone revoked');
    expect(keyStoppedText('old', records, NOW)).toBe('key old expired');
    expect(keyStoppedText('old', records, NOW - 1)).toBeUndefined();
    expect(keyStoppedText('ci', records, NOW)).toBeUndefined();
  });
  it('reads the keys through the store (its cache)', async () => {
    let reads = 0;
    const check = keyCheckOf({ list: async () => ((reads += 1), records) });
    expect(await check('temp', NOW)).toBe('key temp revoked');
    expect(reads).toBe(1);
  });
});

describe('Function: callerSafeText', () => {
  const dynamo = 'Item size to update has exceeded the maximum allowed size';
  it("replaces an AWS service exception's text, keeps the relay's own", () => {
    expect(callerSafeText('ValidationException', dynamo)).toBe(INTERNAL_ERROR_TEXT);
    expect(callerSafeText('NoServerAvailableError', 'No A100 available')).toBe('No A100 available');
  });
  it('applies to workflow failures (the Lambda Cause) and to job failures', () => {
    const cause = JSON.stringify({ errorType: 'ValidationException', errorMessage: dynamo });
    expect(caughtErrorText({ Error: 'ValidationException', Cause: cause })).toBe(INTERNAL_ERROR_TEXT);
    const business = JSON.stringify({
      errorType: 'QuotaExceededError',
      errorMessage: 'Hourly order limit reached (1 per hour)',
    });
    expect(caughtErrorText({ Error: 'QuotaExceededError', Cause: business })).toBe(
      'Hourly order limit reached (1 per hour)',
    );
    const sdk = Object.assign(new Error(dynamo), { name: 'ValidationException' });
    expect(errorText(sdk)).toBe(INTERNAL_ERROR_TEXT);
    expect(errorText(new Error('order 5 is not an order of key ci'))).toBe('order 5 is not an order of key ci');
  });
});
