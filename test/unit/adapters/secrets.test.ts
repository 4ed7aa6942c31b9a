import { parseSlackSigningSecret } from '../../../lambdas/adapters/secrets';

describe('Function: parseSlackSigningSecret', () => {
  it('treats the deployed placeholder {"signing_secret":""} as no verification', () => {
    expect(parseSlackSigningSecret(JSON.stringify({ signing_secret: '', unused: 'x' }))).toBeUndefined();
  });

  it('reads the secret from the JSON form', () => {
    expect(parseSlackSigningSecret('{"signing_secret":"8f742231b10e8888abcd99yyyzzz85a5"}')).toBe(
      '8f742231b10e8888abcd99yyyzzz85a5',
    );
  });

  it('accepts a raw value and ignores surrounding whitespace', () => {
    expect(parseSlackSigningSecret('  abc123  ')).toBe('abc123');
  });

  it('returns undefined for unset or empty values', () => {
    expect(parseSlackSigningSecret(undefined)).toBeUndefined();
    expect(parseSlackSigningSecret('')).toBeUndefined();
  });
});
