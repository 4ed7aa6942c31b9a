/**
 * Where the CLI sends and with which secret: --url / GPU_RELAY_URL, --secret / GPU_RELAY_SECRET /
 * WEBHOOK_SECRET, --key / GPU_RELAY_KEY_ID, and how it signs: --signature v2 (the default) or v1
 * (for relays older than signature v2; --no-timestamp only with v1). A local relay's card
 * (cli/local-relay.ts) fills each value that is not set, independently: the card whose URL matches the
 * URL set, or with no URL set the only running local relay (several: the user picks one with --url).
 * A card's secrets only ever go to that card's own loopback URL, and its webhook secret never signs as
 * another caller key.
 */
import type { Values } from './args';
import { parseUrl } from './args';
import { DEFAULT_URL, usageError } from './commands';
import { sameLocalRelay } from '../contract/local-relay-file';
import { readLocalRelays } from './local-relay';
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
  /** The local relay's callback signing secret, when the connection goes to a local relay's card. */
  readonly localCallbackSecret?: string;
  /** True when the connection goes to a running local relay (its card): commands then wait by default. */
  readonly local: boolean;
}

/** The card of the local relay this command talks to, if any. */
export const localRelayFor = (command: string, url: string | undefined): LocalRelay | undefined => {
  const cards = readLocalRelays();
  if (url !== undefined) return cards.find((card) => sameLocalRelay(card.url, url));
  if (cards.length > 1)
    throw usageError(
      command,
      `${cards.length} local relays are running here (${cards.map((c) => c.url).join(', ')}): pick one with --url`,
    );
  return cards[0];
};

export const connectionOf = (command: string, values: Values): Connection => {
  const env = process.env;
  const setUrl = values.url ?? env.GPU_RELAY_URL;
  const local = localRelayFor(command, setUrl);
  const keyId = values.key ?? env.GPU_RELAY_KEY_ID;
  // The card holds the relay's webhook secret: it signs as the default key only, never as --key NAME.
  const cardSecret = keyId === undefined || keyId === 'default' ? local?.secret : undefined;
  const secret = values.secret ?? env.GPU_RELAY_SECRET ?? env.WEBHOOK_SECRET ?? cardSecret;
  hideSecret(secret);
  const rawUrl = setUrl ?? local?.url ?? DEFAULT_URL;
  const base = parseUrl(
    command,
    values.url ? '--url' : setUrl ? 'GPU_RELAY_URL' : local ? local.file : '--url',
    rawUrl,
  );
  const signature = values.signature ?? 'v2';
  if (signature !== 'v1' && signature !== 'v2') throw usageError(command, '--signature must be v1 or v2');
  if (signature === 'v2' && values['no-timestamp'])
    throw usageError(command, '--no-timestamp needs --signature v1 (a v2 signature always has a timestamp)');
  if (local && values.verbose) err(`using the local relay at ${local.url} (${local.file})`);
  return {
    secret,
    base,
    timestamped: !values['no-timestamp'],
    signature,
    verbose: Boolean(values.verbose),
    ...(keyId ? { keyId } : {}),
    ...(local ? { localCallbackSecret: local.callbackSecret } : {}),
    local: local !== undefined,
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
