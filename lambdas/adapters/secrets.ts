/**
 * Secret values: from Secrets Manager when `<NAME>_ARN` is set (AWS), else from the plain variable
 * (local). Powertools caches each value for 5 minutes, so a rotation is picked up within minutes.
 */
import { getSecret } from '@aws-lambda-powertools/parameters/secrets';
import type { RelayEnv } from './env';

const MAX_AGE_SECONDS = 300;

/** Reads a secret string; `versionStage: 'AWSPREVIOUS'` reads the previous value during a rotation. */
export const getSecretString = async (secretId: string, versionStage?: 'AWSCURRENT' | 'AWSPREVIOUS'): Promise<string | undefined> => {
  try {
    const value = await getSecret<string>(secretId, {
      maxAge: MAX_AGE_SECONDS,
      ...(versionStage ? { sdkOptions: { VersionStage: versionStage } } : {}),
    });
    if (typeof value !== 'string') throw new Error(`secret ${secretId} is not a string`);
    return value;
  } catch (error) {
    // No previous version exists until the first rotation: that is not an error.
    if (versionStage === 'AWSPREVIOUS') return undefined;
    throw error;
  }
};

/** The webhook secrets accepted now: current first, then the previous one during a rotation. */
export const webhookSecrets = async (env: RelayEnv): Promise<string[]> => {
  if (env.WEBHOOK_SECRET_ARN) {
    const [current, previous] = await Promise.all([
      getSecretString(env.WEBHOOK_SECRET_ARN),
      getSecretString(env.WEBHOOK_SECRET_ARN, 'AWSPREVIOUS'),
    ]);
    return [current, previous].filter((s): s is string => typeof s === 'string' && s.length > 0 && s !== undefined)
      .filter((s, i, all) => all.indexOf(s) === i);
  }
  return [env.WEBHOOK_SECRET, env.WEBHOOK_SECRET_PREVIOUS].filter((s): s is string => !!s);
};

export const marketplaceApiKey = async (env: RelayEnv): Promise<string> => {
  const key = env.MARKETPLACE_API_KEY_ARN ? await getSecretString(env.MARKETPLACE_API_KEY_ARN) : env.MARKETPLACE_API_KEY;
  if (!key) throw new Error('marketplace API key is not configured (MARKETPLACE_API_KEY or MARKETPLACE_API_KEY_ARN)');
  return key;
};

export interface ChatWebhooks { readonly slack?: string; readonly discord?: string }

export const chatWebhooks = async (env: RelayEnv): Promise<ChatWebhooks> => {
  if (env.CHAT_WEBHOOKS_SECRET_ARN) {
    const raw = await getSecretString(env.CHAT_WEBHOOKS_SECRET_ARN);
    let parsed: Record<string, unknown> = {};
    try { parsed = JSON.parse(raw ?? '{}') as Record<string, unknown>; } catch { parsed = {}; }
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
      return typeof parsed.signing_secret === 'string' && parsed.signing_secret.length > 0 ? parsed.signing_secret : undefined;
    } catch {
      return value;
    }
  }
  return value;
};

export const slackSigningSecret = async (env: RelayEnv): Promise<string | undefined> =>
  parseSlackSigningSecret(env.SLACK_SIGNING_SECRET_ARN ? await getSecretString(env.SLACK_SIGNING_SECRET_ARN) : env.SLACK_SIGNING_SECRET);
