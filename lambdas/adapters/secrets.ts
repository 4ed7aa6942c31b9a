/**
 * Secret values: from Secrets Manager when `<NAME>_ARN` is set (AWS), else from the plain variable
 * (local). Values are cached for 5 minutes, so a rotation is picked up within minutes — and at once
 * by a signature check that matches no cached webhook secret: it may re-read them (`fresh`), at most
 * once per SECRET_REFRESH_MIN_INTERVAL_SECONDS per instance, so a caller that switches to the new
 * secret right after put-secret-value is not refused by warm functions for up to 5 minutes.
 *
 * The cache is our own (`readSecret`: a Map keyed on version stage and secret id around
 * GetSecretValue), not Powertools Parameters' SecretsProvider, which this module used before. That
 * provider keys its cache on the secret name (and transform) only, not on `sdkOptions.VersionStage`,
 * so reading AWSCURRENT and AWSPREVIOUS through one provider made both stages share one entry, and it
 * took a subclass per stage to keep them apart (plus an override to cache a missing AWSPREVIOUS);
 * what was left of the library was a 5-minute Map. And it cost every function that reads a secret
 * (every API function, the workflow tasks, the worker, the watch) ~3.5 KB of bundle and its share of
 * the module load (BENCHMARKS.md §15, "Third pass").
 */
import {
  GetSecretValueCommand,
  ResourceNotFoundException,
  SecretsManagerClient,
} from '@aws-sdk/client-secrets-manager';
import { awsClientConfig } from './aws-clients';
import type { RelayEnv } from './env';
import { logger, traceClient } from './observability';

/** How long a fetched value (or a missing AWSPREVIOUS) is reused. */
export const SECRET_MAX_AGE_SECONDS = 300;

export type VersionStage = 'AWSCURRENT' | 'AWSPREVIOUS';

/**
 * The least time between two cache-bypassing reads of one secret by one instance. Requests with bad
 * signatures (an attacker's, a misconfigured caller's) cost at most 2 Secrets Manager reads per this
 * interval per warm instance, whatever their rate.
 */
export const SECRET_REFRESH_MIN_INTERVAL_SECONDS = 30;

/** How a read may use the cache. */
export interface SecretReadOptions {
  /** Bypass the cache if this instance has not done so for this secret in the last SECRET_REFRESH_MIN_INTERVAL_SECONDS. */
  readonly fresh?: boolean;
}

const lastForcedRead = new Map<string, number>();

/** True (and counted) when a cache-bypassing read of `secretId` is allowed now. */
const mayReadFresh = (secretId: string): boolean => {
  const now = Date.now();
  const last = lastForcedRead.get(secretId);
  if (last !== undefined && now - last < SECRET_REFRESH_MIN_INTERVAL_SECONDS * 1000) return false;
  lastForcedRead.set(secretId, now);
  return true;
};

/** Cached in place of a value when a secret has no AWSPREVIOUS version yet (before its first rotation). */
const NO_VERSION = '';

const isNotFound = (error: unknown): boolean =>
  error instanceof ResourceNotFoundException ||
  (error as { name?: unknown } | null)?.name === 'ResourceNotFoundException';

let client: SecretsManagerClient | undefined;
const secretsClient = (): SecretsManagerClient => (client ??= traceClient(new SecretsManagerClient(awsClientConfig())));

/** Values read, per `<stage> <secret id>`, until `expiresAt` (ms since the epoch). */
const cache = new Map<string, { readonly value: string; readonly expiresAt: number }>();
/** The read under way per key: concurrent reads of one key (a cold start's) share one request. */
const reading = new Map<string, Promise<string>>();

/** One GetSecretValue of one stage; a missing AWSPREVIOUS is NO_VERSION. Not a string (or empty) throws. */
const fetchSecret = async (secretId: string, stage: VersionStage): Promise<string> => {
  try {
    const { SecretString } = await secretsClient().send(
      new GetSecretValueCommand({ SecretId: secretId, VersionStage: stage }),
    );
    if (SecretString) return SecretString;
  } catch (error) {
    // Secrets Manager answers ResourceNotFoundException for a stage no version carries. Cached as
    // "none" like a value, instead of asking again on every request until the first rotation.
    if (stage === 'AWSPREVIOUS' && isNotFound(error)) return NO_VERSION;
    throw error;
  }
  throw new Error(`secret ${secretId} is not a string`);
};

/**
 * A stage's value from the cache while younger than SECRET_MAX_AGE_SECONDS, else read and cached.
 * `forceFetch` starts a read of its own whatever the cache holds or a read under way (which may have
 * started before a rotation); the latest read started is the one cached. Failures are not cached.
 */
const readSecret = (secretId: string, stage: VersionStage, forceFetch: boolean): Promise<string> => {
  const key = `${stage} ${secretId}`;
  if (!forceFetch) {
    const cached = cache.get(key);
    if (cached && cached.expiresAt >= Date.now()) return Promise.resolve(cached.value);
    const under = reading.get(key);
    if (under) return under;
  }
  const read = fetchSecret(secretId, stage).then(
    (value) => {
      if (reading.get(key) === read) {
        reading.delete(key);
        cache.set(key, { value, expiresAt: Date.now() + SECRET_MAX_AGE_SECONDS * 1000 });
      }
      return value;
    },
    (error: unknown) => {
      if (reading.get(key) === read) reading.delete(key);
      throw error;
    },
  );
  reading.set(key, read);
  return read;
};

/** Forgets every cached value (tests; a new Lambda instance starts empty anyway). */
export const clearSecretCache = (): void => {
  client = undefined;
  cache.clear();
  reading.clear();
  lastForcedRead.clear();
};

/**
 * Reads a secret string of one version stage (default AWSCURRENT), cached per stage for
 * SECRET_MAX_AGE_SECONDS. AWSPREVIOUS gives undefined when the secret has no previous version.
 * `forceFetch` reads Secrets Manager whatever the cache holds, and caches the answer.
 */
export const getSecretString = async (
  secretId: string,
  versionStage: VersionStage = 'AWSCURRENT',
  forceFetch = false,
): Promise<string | undefined> => {
  const value = await readSecret(secretId, versionStage, forceFetch);
  return versionStage === 'AWSPREVIOUS' && value === NO_VERSION ? undefined : value;
};

/** The previous version of a secret, or undefined. A read failure is not cached and only drops the old key. */
const previousSecret = async (
  secretId: string,
  forceFetch: boolean,
  what = 'webhook secret',
): Promise<string | undefined> => {
  try {
    return await getSecretString(secretId, 'AWSPREVIOUS', forceFetch);
  } catch (error) {
    // The current secret still verifies; refusing everything (503) for an unreadable old key would
    // be worse. The error name only: the message may quote the request.
    logger.warn(`previous ${what} unavailable`, { error_name: error instanceof Error ? error.name : 'unknown' });
    return undefined;
  }
};

const distinctNonEmpty = (values: readonly (string | undefined)[]): string[] =>
  values.filter((s): s is string => typeof s === 'string' && s.length > 0).filter((s, i, all) => all.indexOf(s) === i);

/** Standard Webhooks' secret prefix. */
export const WHSEC_PREFIX = 'whsec_';
/** The shortest callback signing key accepted, in bytes (Standard Webhooks: 24 to 64). */
export const MIN_CALLBACK_KEY_BYTES = 24;

/**
 * A callback signing secret in Standard Webhooks form, `whsec_<base64 key>`, from a stored value with
 * or without the prefix: the deployed secret is generated as 48 letters and digits (valid base64 of a
 * 36-byte key; Secrets Manager cannot generate the prefix), an operator may put `whsec_…` values.
 * Throws, naming the rule and never the value, when it is not base64 of at least 24 bytes.
 */
export const callbackSigningKey = (raw: string): string => {
  const value = raw.trim();
  const base64 = value.startsWith(WHSEC_PREFIX) ? value.slice(WHSEC_PREFIX.length) : value;
  const valid =
    base64.length % 4 === 0 &&
    /^[A-Za-z0-9+/]+={0,2}$/.test(base64) &&
    Buffer.from(base64, 'base64').length >= MIN_CALLBACK_KEY_BYTES;
  if (!valid)
    throw new Error(
      `the callback signing secret must be ${WHSEC_PREFIX} followed by base64 of at least ${MIN_CALLBACK_KEY_BYTES} random bytes`,
    );
  return `${WHSEC_PREFIX}${base64}`;
};

/**
 * The secrets callbacks and lifecycle events are signed with (Standard Webhooks), current first, then
 * the previous version during a rotation: each delivery carries one signature per key, so receivers
 * still holding the old key keep verifying until they switch (issue 21). Its own secret, never the
 * webhook secret: a delivery can never pass as a request.
 */
export const callbackSigningSecrets = async (env: RelayEnv): Promise<string[]> => {
  const arn = env.CALLBACK_SIGNING_SECRET_ARN;
  const values = arn
    ? await Promise.all([getSecretString(arn), previousSecret(arn, false, 'callback signing secret')])
    : [env.CALLBACK_SIGNING_SECRET, env.CALLBACK_SIGNING_SECRET_PREVIOUS];
  return distinctNonEmpty(values.map((v) => (v?.trim() ? callbackSigningKey(v) : undefined)));
};

/**
 * The webhook secrets accepted now: current first, then the previous one during a rotation. With
 * `fresh` (a signature matched none of the cached ones), both stages are read from Secrets Manager
 * again unless this instance did so less than SECRET_REFRESH_MIN_INTERVAL_SECONDS ago.
 */
export const webhookSecrets = async (env: RelayEnv, options: SecretReadOptions = {}): Promise<string[]> => {
  if (env.WEBHOOK_SECRET_ARN) {
    const arn = env.WEBHOOK_SECRET_ARN;
    const force = options.fresh === true && mayReadFresh(arn);
    if (force) logger.info('webhook secrets re-read: a signature matched no cached secret');
    const [current, previous] = await Promise.all([
      getSecretString(arn, 'AWSCURRENT', force),
      previousSecret(arn, force),
    ]);
    return distinctNonEmpty([current, previous]);
  }
  return distinctNonEmpty([env.WEBHOOK_SECRET, env.WEBHOOK_SECRET_PREVIOUS]);
};

export const marketplaceApiKey = async (env: RelayEnv): Promise<string> => {
  const key = env.MARKETPLACE_API_KEY_ARN
    ? await getSecretString(env.MARKETPLACE_API_KEY_ARN)
    : env.MARKETPLACE_API_KEY;
  if (!key) throw new Error('marketplace API key is not configured (MARKETPLACE_API_KEY or MARKETPLACE_API_KEY_ARN)');
  return key;
};

/** The label a local ssh password secret derived from WEBHOOK_SECRET carries (never the webhook secret itself). */
export const LOCAL_SSH_PASSWORD_LABEL = 'gpu-relay ssh password:';

/**
 * The keys of the relay's own root password of each order (issue 38 §4): current first, then the
 * previous version during a rotation (CheckOrder logs in to an order placed before it). AWS:
 * SSH_PASSWORD_SECRET_ARN's AWSCURRENT and AWSPREVIOUS. Locally SSH_PASSWORD_SECRET (and
 * SSH_PASSWORD_SECRET_PREVIOUS), else a value derived from WEBHOOK_SECRET under its own label.
 */
export const sshPasswordSecrets = async (env: RelayEnv): Promise<string[]> => {
  const arn = env.SSH_PASSWORD_SECRET_ARN;
  const derived = env.WEBHOOK_SECRET ? `${LOCAL_SSH_PASSWORD_LABEL}${env.WEBHOOK_SECRET}` : undefined;
  const [current, previous] = arn
    ? await Promise.all([getSecretString(arn), previousSecret(arn, false, 'ssh password secret')])
    : [env.SSH_PASSWORD_SECRET || derived, env.SSH_PASSWORD_SECRET_PREVIOUS];
  if (!current)
    throw new Error(
      'no ssh password secret configured (SSH_PASSWORD_SECRET_ARN, SSH_PASSWORD_SECRET or WEBHOOK_SECRET)',
    );
  return distinctNonEmpty([current, previous]);
};

export interface ChatWebhooks {
  readonly slack?: string;
  readonly discord?: string;
}

export const chatWebhooks = async (env: RelayEnv): Promise<ChatWebhooks> => {
  if (env.CHAT_WEBHOOKS_SECRET_ARN) {
    const raw = await getSecretString(env.CHAT_WEBHOOKS_SECRET_ARN);
    let parsed: Record<string, unknown> = {};
    try {
      parsed = JSON.parse(raw ?? '{}') as Record<string, unknown>;
    } catch {
      parsed = {};
    }
    const str = (v: unknown) => (typeof v === 'string' && v.length > 0 ? v : undefined);
    return { slack: str(parsed.slack_webhook_url), discord: str(parsed.discord_webhook_url) };
  }
  return { slack: env.SLACK_WEBHOOK_URL || undefined, discord: env.DISCORD_WEBHOOK_URL || undefined };
};

/** The Slack signing secret: a raw value or JSON {"signing_secret": "..."}; empty = no verification. */
export const parseSlackSigningSecret = (raw: string | undefined): string | undefined => {
  const value = raw?.trim();
  if (!value) return undefined;
  if (value.startsWith('{')) {
    try {
      const parsed = JSON.parse(value) as { signing_secret?: unknown };
      return typeof parsed.signing_secret === 'string' && parsed.signing_secret.length > 0
        ? parsed.signing_secret
        : undefined;
    } catch {
      return value;
    }
  }
  return value;
};

/** The Slack signing secret; `fresh` as for webhookSecrets (Slack's "Regenerate" takes effect at once). */
export const slackSigningSecret = async (
  env: RelayEnv,
  options: SecretReadOptions = {},
): Promise<string | undefined> => {
  const arn = env.SLACK_SIGNING_SECRET_ARN;
  if (!arn) return parseSlackSigningSecret(env.SLACK_SIGNING_SECRET);
  const force = options.fresh === true && mayReadFresh(arn);
  if (force) logger.info('Slack signing secret re-read: a signature did not match the cached secret');
  return parseSlackSigningSecret(await getSecretString(arn, 'AWSCURRENT', force));
};
