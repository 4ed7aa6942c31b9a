/**
 * Where the CLI sends and with which secret: --url / GPU_RELAY_URL, --secret / GPU_RELAY_SECRET /
 * WEBHOOK_SECRET, --key / GPU_RELAY_KEY_ID.
 */
import type { Values } from './args';
import { parseUrl } from './args';
import { DEFAULT_URL, usageError } from './commands';
import { hideSecret } from './output';

export interface Connection {
  readonly secret: string | undefined;
  readonly base: URL;
  readonly timestamped: boolean;
  readonly verbose: boolean;
  readonly keyId?: string;
}

export const connectionOf = (command: string, values: Values): Connection => {
  const env = process.env;
  const secret = values.secret ?? env.GPU_RELAY_SECRET ?? env.WEBHOOK_SECRET;
  hideSecret(secret);
  const rawUrl = values.url ?? env.GPU_RELAY_URL ?? DEFAULT_URL;
  const base = parseUrl(command, values.url ? '--url' : 'GPU_RELAY_URL', rawUrl);
  const keyId = values.key ?? env.GPU_RELAY_KEY_ID;
  return { secret, base, timestamped: !values['no-timestamp'], verbose: Boolean(values.verbose), ...(keyId ? { keyId } : {}) };
};

export const requireSecret = (command: string, secret: string | undefined): string => {
  if (!secret) {
    throw usageError(command, 'no webhook secret: set GPU_RELAY_SECRET (or WEBHOOK_SECRET) or pass --secret');
  }
  return secret;
};
