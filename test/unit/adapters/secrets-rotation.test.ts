/**
 * The AWS path of the webhook secret through a rotation, against a faked Secrets Manager that keeps
 * version stages like the real one: put-secret-value moves AWSCURRENT to the new version and
 * AWSPREVIOUS to the version that was current. Only Date is faked, to step past the cache's maxAge.
 */
import middy from '@middy/core';
import {
  GetSecretValueCommand,
  ResourceNotFoundException,
  SecretsManagerClient,
  type GetSecretValueCommandInput,
} from '@aws-sdk/client-secrets-manager';
import { mockClient } from 'aws-sdk-client-mock';
import { Webhook } from 'standardwebhooks';
import type { RelayEnv } from '../../../lambdas/adapters/env';
import { testEnv } from '../../fakes/env';
import { notifierFromEnv } from '../../../lambdas/adapters/notifier-from-env';
import * as observability from '../../../lambdas/adapters/observability';
import {
  callbackSigningKey,
  callbackSigningSecrets,
  clearSecretCache,
  getSecretString,
  SECRET_MAX_AGE_SECONDS,
  SECRET_REFRESH_MIN_INTERVAL_SECONDS,
  slackSigningSecret,
  webhookSecrets,
} from '../../../lambdas/adapters/secrets';
import { decodeBody } from '../../../lambdas/middleware/body';
import { errorHandler } from '../../../lambdas/middleware/error-handler';
import type { RelayEvent } from '../../../lambdas/middleware/http';
import { verifySignature } from '../../../lambdas/middleware/verify-signature';
import { apiEvent, lambdaContext, sign } from '../../fixtures/events/api-event';
import { parseResult } from '../../helpers/parse-result';
import { startReceiver, type Receiver } from './receiver';

const ARN = 'arn:aws:secretsmanager:us-east-1:123456789012:secret:relay/webhook-AbCdEf';
const T0 = Date.UTC(2026, 0, 1);
const OLD = 'whsec-old-0123456789abcdef';
const NEW = 'whsec-new-fedcba9876543210';
const body = '{"gpu_type":"RTX 4090","price_max":0.5}';

/** Secrets Manager's versions and staging labels for one secret. */
class FakeSecretsManager {
  private readonly versions: { value: string; stages: Set<string> }[] = [];
  /** Transient failures to answer for a stage, once each. */
  public readonly failNext: Record<string, number> = {};

  /** put-secret-value: the new version becomes AWSCURRENT, the old current one AWSPREVIOUS. */
  public put(value: string): void {
    for (const v of this.versions) v.stages.delete('AWSPREVIOUS');
    for (const v of this.versions) {
      if (v.stages.delete('AWSCURRENT')) v.stages.add('AWSPREVIOUS');
    }
    this.versions.push({ value, stages: new Set(['AWSCURRENT']) });
  }

  public get(input: GetSecretValueCommandInput): { SecretString: string } {
    if (input.SecretId !== ARN)
      throw new ResourceNotFoundException({
        message: "Secrets Manager can't find the specified secret.",
        $metadata: {},
      });
    const stage = input.VersionStage ?? 'AWSCURRENT';
    if ((this.failNext[stage] ?? 0) > 0) {
      this.failNext[stage] -= 1;
      throw Object.assign(new Error('Rate exceeded'), { name: 'ThrottlingException' });
    }
    const version = this.versions.find((v) => v.stages.has(stage));
    if (!version) {
      throw new ResourceNotFoundException({
        message: `Secrets Manager can't find the specified secret value for staging label: ${stage}`,
        $metadata: {},
      });
    }
    return { SecretString: version.value };
  }
}

describe('Adapter: secrets (webhook secret rotation in AWS)', () => {
  const sm = mockClient(SecretsManagerClient);
  let store: FakeSecretsManager;
  let logs: string[];
  const env: RelayEnv = testEnv({ WEBHOOK_SECRET_ARN: ARN, ALLOW_PRIVATE_CALLBACKS: 'true' });
  const calls = () => sm.commandCalls(GetSecretValueCommand).map((c) => c.args[0].input.VersionStage ?? 'AWSCURRENT');
  const advanceSeconds = (s: number) => jest.setSystemTime(Date.now() + s * 1000);

  beforeEach(() => {
    jest.useFakeTimers({
      now: T0,
      doNotFake: [
        'hrtime',
        'nextTick',
        'performance',
        'queueMicrotask',
        'setImmediate',
        'clearImmediate',
        'setInterval',
        'clearInterval',
        'setTimeout',
        'clearTimeout',
      ],
    });
    store = new FakeSecretsManager();
    sm.reset();
    sm.on(GetSecretValueCommand).callsFake((input: GetSecretValueCommandInput) => store.get(input));
    clearSecretCache();
    logs = [];
    for (const level of ['debug', 'info', 'warn', 'error'] as const) {
      jest.spyOn(observability.logger, level).mockImplementation((...args: unknown[]) => {
        logs.push(JSON.stringify(args));
      });
    }
  });
  afterEach(() => {
    jest.useRealTimers();
    jest.restoreAllMocks();
  });
  afterAll(() => sm.restore());

  /** The signed-route middleware as the API chain uses it, reading the secrets adapter. */
  const verified = middy<RelayEvent>()
    .use(decodeBody())
    .use(verifySignature({ secrets: (read) => webhookSecrets(env, read), now: () => Date.now() })) // the faked clock
    .use(errorHandler())
    .handler(async () => ({ statusCode: 204, body: '' }));
  const statusOf = async (secret: string): Promise<number> => {
    const ts = String(Math.floor(Date.now() / 1000));
    const event = apiEvent({
      body,
      headers: { 'x-webhook-signature': sign(secret, body, ts), 'x-webhook-timestamp': ts },
    });
    return parseResult(await verified(event, lambdaContext())).statusCode;
  };

  it('returns the same secrets on a warm call as on the cold call after a rotation', async () => {
    // Prepare
    store.put(OLD);
    store.put(NEW);
    // Act
    const cold = await webhookSecrets(env);
    const warm = await webhookSecrets(env);
    const warmAgain = await webhookSecrets(env);
    // Assess
    expect(cold).toEqual([NEW, OLD]);
    expect(warm).toEqual(cold);
    expect(warmAgain).toEqual(cold);
    expect(calls().sort()).toEqual(['AWSCURRENT', 'AWSPREVIOUS']); // one read per stage, then cached
  });

  it('keeps the stages apart when the previous one is read first', async () => {
    store.put(OLD);
    store.put(NEW);
    expect(await getSecretString(ARN, 'AWSPREVIOUS')).toBe(OLD);
    expect(await getSecretString(ARN)).toBe(NEW);
    expect(await getSecretString(ARN, 'AWSPREVIOUS')).toBe(OLD);
    expect(await getSecretString(ARN, 'AWSCURRENT')).toBe(NEW);
  });

  it('caches a missing AWSPREVIOUS before the first rotation instead of asking on every request', async () => {
    store.put(OLD);
    expect(await webhookSecrets(env)).toEqual([OLD]);
    expect(await webhookSecrets(env)).toEqual([OLD]);
    expect(calls()).toHaveLength(2);
    expect(await getSecretString(ARN, 'AWSPREVIOUS')).toBeUndefined();
  });

  it('sees a rotation once the cached values are older than maxAge', async () => {
    // Prepare
    store.put(OLD);
    expect(await webhookSecrets(env)).toEqual([OLD]);
    // Act
    store.put(NEW);
    advanceSeconds(SECRET_MAX_AGE_SECONDS - 1);
    const beforeExpiry = await webhookSecrets(env);
    advanceSeconds(2);
    const afterExpiry = await webhookSecrets(env);
    // Assess
    expect(beforeExpiry).toEqual([OLD]); // within maxAge: the cached values, fetched before the rotation
    expect(afterExpiry).toEqual([NEW, OLD]);
    expect(await webhookSecrets(env)).toEqual([NEW, OLD]);
  });

  it('accepts requests signed with either key through a rotation', async () => {
    {
      // Before the rotation: only the old key.
      store.put(OLD);
      expect(await statusOf(OLD)).toBe(204);
      expect(await statusOf(NEW)).toBe(401);

      // The rotation, seen by this warm instance once its cache expires.
      store.put(NEW);
      advanceSeconds(SECRET_MAX_AGE_SECONDS + 1);
      for (let i = 0; i < 3; i += 1) {
        // Cold and warm reads alike (the first call refills the cache, the next ones hit it).
        expect(await statusOf(NEW)).toBe(204);
        expect(await statusOf(OLD)).toBe(204);
        expect(await statusOf('some-other-secret')).toBe(401);
      }

      // A second rotation retires the first key.
      store.put('whsec-third-0000');
      advanceSeconds(SECRET_MAX_AGE_SECONDS + 1);
      expect(await statusOf(OLD)).toBe(401);
      expect(await statusOf(NEW)).toBe(204);
      expect(await statusOf('whsec-third-0000')).toBe(204);
    }
    // Secrets never reach the logs.
    expect(logs.join('\n')).not.toMatch(new RegExp(`${OLD}|${NEW}|whsec-third`));
  });

  it('accepts the new key on a warm instance right after a rotation: one re-read on the mismatch, then cached', async () => {
    // Prepare: a warm instance whose cache holds the old key only.
    store.put(OLD);
    expect(await statusOf(OLD)).toBe(204);
    expect(calls()).toHaveLength(2);
    // Act: the operator rotates, and a caller switches at once (well within the cache's maxAge).
    store.put(NEW);
    advanceSeconds(5);
    // Assess
    expect(await statusOf(NEW)).toBe(204);
    expect(calls()).toHaveLength(4); // both stages read again once
    expect(await statusOf(NEW)).toBe(204);
    expect(await statusOf(OLD)).toBe(204); // now the previous key
    expect(calls()).toHaveLength(4); // the re-read values were cached
    expect(logs.join('\n')).toContain('webhook secrets re-read');
    expect(logs.join('\n')).not.toMatch(new RegExp(`${OLD}|${NEW}`));
  });

  it('re-reads for bad signatures at most once per interval per instance', async () => {
    store.put(OLD);
    expect(await statusOf(OLD)).toBe(204);
    const before = calls().length;
    for (let i = 0; i < 5; i += 1) expect(await statusOf(`forged-${i}`)).toBe(401);
    expect(calls().length - before).toBe(2); // one re-read of both stages for five bad signatures
    advanceSeconds(SECRET_REFRESH_MIN_INTERVAL_SECONDS - 1);
    expect(await statusOf('forged-again')).toBe(401);
    expect(calls().length - before).toBe(2);
    advanceSeconds(2);
    expect(await statusOf('forged-later')).toBe(401);
    expect(calls().length - before).toBe(4);
  });

  it('refuses (401, not 503) when the re-read fails, and still accepts the cached keys', async () => {
    store.put(OLD);
    expect(await statusOf(OLD)).toBe(204);
    store.failNext.AWSCURRENT = 1;
    expect(await statusOf('forged')).toBe(401);
    expect(await statusOf(OLD)).toBe(204);
    expect(logs.join('\n')).toContain('webhook secret re-read failed');
  });

  it('reads a regenerated Slack signing secret past the cache on request, at most once per interval', async () => {
    const slackEnv: RelayEnv = testEnv({ SLACK_SIGNING_SECRET_ARN: ARN });
    store.put(OLD);
    expect(await slackSigningSecret(slackEnv)).toBe(OLD);
    store.put(NEW);
    expect(await slackSigningSecret(slackEnv)).toBe(OLD); // cached
    expect(await slackSigningSecret(slackEnv, { fresh: true })).toBe(NEW);
    expect(await slackSigningSecret(slackEnv)).toBe(NEW);
    store.put('slack-third');
    expect(await slackSigningSecret(slackEnv, { fresh: true })).toBe(NEW); // within the interval: the cache
    advanceSeconds(SECRET_REFRESH_MIN_INTERVAL_SECONDS);
    expect(await slackSigningSecret(slackEnv, { fresh: true })).toBe('slack-third');
  });

  it('keeps verifying with the current key when the previous one cannot be read, and asks again next time', async () => {
    store.put(OLD);
    store.put(NEW);
    store.failNext.AWSPREVIOUS = 1;
    expect(await webhookSecrets(env)).toEqual([NEW]);
    expect(await webhookSecrets(env)).toEqual([NEW, OLD]); // the failure was not cached
    expect(logs.join('\n')).toContain('previous webhook secret unavailable');
    expect(logs.join('\n')).not.toMatch(new RegExp(`${OLD}|${NEW}`));
  });

  it('answers 503 when the current key cannot be read', async () => {
    store.put(OLD);
    store.failNext.AWSCURRENT = 1;
    expect(await statusOf(OLD)).toBe(503);
    expect(await statusOf(OLD)).toBe(204);
  });

  it('never signs a callback with the webhook secret: without a callback signing secret nothing is sent', async () => {
    store.put(OLD);
    store.put(NEW);
    const receiver = await startReceiver();
    try {
      expect(
        await notifierFromEnv(env).callback(`${receiver.base}/cb`, 'task-2', {
          success: true,
          order_id: 2,
          status: 'cancelled',
        }),
      ).toBe(false);
      expect(receiver.requests).toHaveLength(0);
    } finally {
      await receiver.close();
    }
    expect(calls()).toEqual([]);
  });
});

describe('Adapter: secrets (callback signing secret, Standard Webhooks, in AWS)', () => {
  const sm = mockClient(SecretsManagerClient);
  let store: FakeSecretsManager;
  let receiver: Receiver;
  /** As the stack generates it: 48 letters and digits, no prefix (base64 of a 36-byte key). */
  const GENERATED = 'Q7w2Zk9LmN4pR8sT1vX6yB3cD5fG0hJ2aE4iK6oU8qW1zY3x';
  /** As an operator may put it: with the prefix. */
  const ROTATED = `whsec_${Buffer.alloc(32, 9).toString('base64')}`;
  const env: RelayEnv = testEnv({
    CALLBACK_SIGNING_SECRET_ARN: ARN,
    WEBHOOK_SECRET_ARN: 'arn:aws:secretsmanager:us-east-1:123456789012:secret:relay/other',
    ALLOW_PRIVATE_CALLBACKS: 'true',
  });

  beforeEach(async () => {
    store = new FakeSecretsManager();
    sm.reset();
    sm.on(GetSecretValueCommand).callsFake((input: GetSecretValueCommandInput) => store.get(input));
    clearSecretCache();
    receiver = await startReceiver();
  });
  afterEach(async () => {
    jest.restoreAllMocks();
    await receiver.close();
  });
  afterAll(() => sm.restore());

  /** Which of `secrets` verify the next callback (standardwebhooks' verify, real clock). */
  const verifyingSecrets = async (secrets: readonly string[]): Promise<string[]> => {
    const before = receiver.requests.length;
    expect(
      await notifierFromEnv(env).callback(`${receiver.base}/cb`, 'task-1', {
        success: true,
        order_id: 1,
        status: 'cancelled',
      }),
    ).toBe(true);
    const req = receiver.requests[before];
    return secrets.filter((secret) => {
      try {
        new Webhook(secret).verify(req.body, req.headers as Record<string, string>);
        return true;
      } catch {
        return false;
      }
    });
  };

  it('reads the generated value as a whsec_ key, and signs with both versions during a rotation', async () => {
    store.put(GENERATED);
    expect(await callbackSigningSecrets(env)).toEqual([`whsec_${GENERATED}`]);
    expect(await verifyingSecrets([`whsec_${GENERATED}`, GENERATED, ROTATED])).toEqual([
      `whsec_${GENERATED}`,
      GENERATED,
    ]);
    // put-secret-value: the new key signs, and the previous one still does until the next rotation.
    store.put(ROTATED);
    clearSecretCache();
    expect(await callbackSigningSecrets(env)).toEqual([ROTATED, `whsec_${GENERATED}`]);
    expect(await verifyingSecrets([ROTATED, `whsec_${GENERATED}`])).toEqual([ROTATED, `whsec_${GENERATED}`]);
    // Never the webhook secret's ARN.
    expect(sm.commandCalls(GetSecretValueCommand).every((c) => c.args[0].input.SecretId === ARN)).toBe(true);
  });

  it('refuses a value that is not base64 of at least 24 bytes, naming the rule and not the value', async () => {
    expect(() => callbackSigningKey('whsec_tooShort0')).toThrow(/whsec_ followed by base64 of at least 24/);
    expect(() => callbackSigningKey('not base64 at all !!')).not.toThrow(/not base64/);
    expect(() => callbackSigningKey('not base64 at all !!')).toThrow();
    expect(callbackSigningKey(` ${ROTATED}\n`)).toBe(ROTATED);
    store.put('short');
    await expect(callbackSigningSecrets(env)).rejects.toThrow(/at least 24/);
  });
});
