/**
 * Where the CLI sends and with which secret: --url / GPU_RELAY_URL, --secret / GPU_RELAY_SECRET /
 * WEBHOOK_SECRET, --key / GPU_RELAY_KEY_ID, and how it signs: --signature v2 (the default) or v1
 * (for relays older than signature v2; --no-timestamp only with v1). With none of the URL or secret set, the local relay's card
 * (cli/local-relay.ts) fills them in; its secrets only ever go to the card's own loopback URL.
 */
import type { Values } from './args';
import { parseUrl } from './args';
import { DEFAULT_URL, usageError } from './commands';
import { readLocalRelay } from './local-relay';
import type { LocalRelay } from './local-relay';
import { err, hideSecret } from './output';

export interface Connection {
  readonly secret: string | undefined;
  readonly base: URL;
  readonly timestamped: boolean;
  /** The signature version: v2 (method, path and body; the default) or v1 for old relays. */
  readonly signature: 'v1' | 'v2';
  readonly verbose: boolean;
  readonly keyId?: string;
  /** The local relay's callback signing secret, when the card chose this connection. */
  readonly localCallbackSecret?: string;
}

/** The local relay's card, when neither a URL nor a secret is set (environment variables and flags win). */
const localRelayFor = (values: Values): LocalRelay | undefined => {
  const env = process.env;
  const urlSet = (values.url ?? env.GPU_RELAY_URL) !== undefined;
  const secretSet = (values.secret ?? env.GPU_RELAY_SECRET ?? env.WEBHOOK_SECRET) !== undefined;
  return urlSet || secretSet ? undefined : readLocalRelay();
};

export const connectionOf = (command: string, values: Values): Connection => {
  const env = process.env;
  const local = localRelayFor(values);
  const secret = values.secret ?? env.GPU_RELAY_SECRET ?? env.WEBHOOK_SECRET ?? local?.secret;
  hideSecret(secret);
  const rawUrl = values.url ?? env.GPU_RELAY_URL ?? local?.url ?? DEFAULT_URL;
  const base = parseUrl(command, values.url ? '--url' : local ? local.file : 'GPU_RELAY_URL', rawUrl);
  const keyId = values.key ?? env.GPU_RELAY_KEY_ID;
  const signature = values.signature ?? 'v2';
  if (signature !== 'v1' && signature !== 'v2') throw usageError(command, '--signature must be v1 or v2');
  if (signature === 'v2' && values['no-timestamp'])
    throw usageError(command, '--no-timestamp needs --signature v1 (a v2 signature always has a timestamp)');
  if (local && values.verbose) err(`using the local relay at ${local.url} and its secrets (${local.file})`);
  return {
    secret,
    base,
    timestamped: !values['no-timestamp'],
    signature,
    verbose: Boolean(values.verbose),
    ...(keyId ? { keyId } : {}),
    ...(local ? { localCallbackSecret: local.callbackSecret } : {}),
  };
};

export const requireSecret = (command: string, secret: string | undefined): string => {
  if (!secret) {
    throw usageError(
      command,
      'no webhook secret: set GPU_RELAY_SECRET (or WEBHOOK_SECRET) or pass --secret, or start the local relay with npm start',
    );
  }
  return secret;
};
