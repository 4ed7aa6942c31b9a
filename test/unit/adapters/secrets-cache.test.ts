/**
 * The secrets adapter's own cache around GetSecretValue (lambdas/adapters/secrets.ts): keyed on
 * secret id and stage, concurrent reads of one key sharing one request, a forced read never served by
 * a read started before it, and nothing but values cached.
 */
import {
  GetSecretValueCommand,
  SecretsManagerClient,
  type GetSecretValueCommandInput,
  type GetSecretValueCommandOutput,
} from '@aws-sdk/client-secrets-manager';
import { mockClient } from 'aws-sdk-client-mock';
import { clearSecretCache, getSecretString, SECRET_MAX_AGE_SECONDS } from '../../../lambdas/adapters/secrets';

const A = 'arn:aws:secretsmanager:us-east-1:123456789012:secret:relay/a-AbCdEf';
const B = 'arn:aws:secretsmanager:us-east-1:123456789012:secret:relay/b-AbCdEf';

/** A GetSecretValue answer the test settles when it likes. */
interface Pending {
  readonly input: GetSecretValueCommandInput;
  resolve(output: Partial<GetSecretValueCommandOutput>): void;
  reject(error: Error): void;
}

describe('Adapter: secrets (cache)', () => {
  const sm = mockClient(SecretsManagerClient);
  let pending: Pending[];
  const reads = () => sm.commandCalls(GetSecretValueCommand).map((c) => c.args[0].input);
  /** Lets the adapter's awaits run until its requests reach the fake. */
  const settle = () => new Promise((r) => setImmediate(r));

  beforeEach(() => {
    sm.reset();
    pending = [];
    sm.on(GetSecretValueCommand).callsFake(
      (input: GetSecretValueCommandInput) =>
        new Promise((resolve, reject) => {
          pending.push({ input, resolve, reject });
        }),
    );
    clearSecretCache();
  });
  afterEach(() => jest.useRealTimers());
  afterAll(() => sm.restore());

  it('shares one request among concurrent reads of one secret and stage, then serves them from the cache', async () => {
    const reading = [getSecretString(A), getSecretString(A), getSecretString(A)];
    await settle();
    expect(pending).toHaveLength(1);
    pending[0].resolve({ SecretString: 'a-current' });
    expect(await Promise.all(reading)).toEqual(['a-current', 'a-current', 'a-current']);
    expect(await getSecretString(A)).toBe('a-current');
    expect(reads()).toHaveLength(1);
  });

  it('keys the cache on secret id and stage', async () => {
    sm.on(GetSecretValueCommand).callsFake(async (input: GetSecretValueCommandInput) => ({
      SecretString: `${input.SecretId === A ? 'a' : 'b'}-${input.VersionStage}`,
    }));
    expect(await getSecretString(A)).toBe('a-AWSCURRENT');
    expect(await getSecretString(B)).toBe('b-AWSCURRENT');
    expect(await getSecretString(A, 'AWSPREVIOUS')).toBe('a-AWSPREVIOUS');
    expect(await getSecretString(B, 'AWSPREVIOUS')).toBe('b-AWSPREVIOUS');
    expect(await getSecretString(A)).toBe('a-AWSCURRENT');
    expect(reads()).toHaveLength(4);
  });

  it('does not serve a forced read from a read started before it, and caches the forced answer', async () => {
    const before = getSecretString(A);
    await settle();
    const forced = getSecretString(A, 'AWSCURRENT', true);
    await settle();
    expect(pending).toHaveLength(2);
    pending[1].resolve({ SecretString: 'rotated' });
    pending[0].resolve({ SecretString: 'stale' });
    expect(await before).toBe('stale');
    expect(await forced).toBe('rotated');
    expect(await getSecretString(A)).toBe('rotated'); // the later read's answer, not the slower earlier one's
    expect(reads()).toHaveLength(2);
  });

  it('caches no failure: the callers sharing a failed read see it, the next read asks again', async () => {
    const reading = [getSecretString(A), getSecretString(A)];
    await settle();
    pending[0].reject(Object.assign(new Error('Rate exceeded'), { name: 'ThrottlingException' }));
    for (const r of reading) await expect(r).rejects.toThrow('Rate exceeded');
    const again = getSecretString(A);
    await settle();
    expect(pending).toHaveLength(2);
    pending[1].resolve({ SecretString: 'a-current' });
    expect(await again).toBe('a-current');
  });

  it('refuses a secret that is not a string, and does not cache that', async () => {
    const binary = getSecretString(A);
    await settle();
    pending[0].resolve({ SecretBinary: new Uint8Array([1, 2, 3]) });
    await expect(binary).rejects.toThrow(`secret ${A} is not a string`);
    const again = getSecretString(A);
    await settle();
    pending[1].resolve({ SecretString: 'a-current' });
    expect(await again).toBe('a-current');
  });

  it('reads again once the cached value is older than SECRET_MAX_AGE_SECONDS', async () => {
    jest.useFakeTimers({ now: Date.UTC(2026, 0, 1), doNotFake: ['setImmediate', 'nextTick', 'queueMicrotask'] });
    sm.on(GetSecretValueCommand).resolves({ SecretString: 'a-current' });
    await getSecretString(A);
    jest.setSystemTime(Date.now() + SECRET_MAX_AGE_SECONDS * 1000);
    await getSecretString(A);
    expect(reads()).toHaveLength(1);
    jest.setSystemTime(Date.now() + 1);
    await getSecretString(A);
    expect(reads()).toHaveLength(2);
  });
});
