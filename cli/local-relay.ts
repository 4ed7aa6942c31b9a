/**
 * The quick path: with no relay URL or secret set, the CLI talks to the relay `npm start` runs here,
 * from its address card `.relay/local.json` (contract/local-relay-file.ts), found in the current
 * directory or the nearest parent. The card is trusted only when its URL is loopback, its process
 * is alive and no one else may read it (mode 0600); otherwise it is ignored, with a warning.
 */
import { readFileSync, statSync } from 'node:fs';
import * as path from 'node:path';
import { LOCAL_RELAY_FILE, isLoopbackUrl } from '../contract/local-relay-file';
import type { LocalRelayCard } from '../contract/local-relay-file';
import { err, hideCallbackSecret, hideSecret } from './output';

export interface LocalRelay {
  readonly file: string;
  readonly url: string;
  readonly secret: string;
  readonly callbackSecret: string;
}

const findCard = (from: string): string | undefined => {
  for (let dir = path.resolve(from); ; dir = path.dirname(dir)) {
    const file = path.join(dir, LOCAL_RELAY_FILE);
    try {
      if (statSync(file).isFile()) return file;
    } catch {
      // Not here: look one folder up.
    }
    if (path.dirname(dir) === dir) return undefined;
  }
};

const alive = (pid: number): boolean => {
  try {
    process.kill(pid, 0);
    return true;
  } catch (error) {
    return (error as NodeJS.ErrnoException).code === 'EPERM';
  }
};

const nonEmpty = (value: unknown): value is string => typeof value === 'string' && value.length > 0;

/** The local relay's card, read once per run; undefined when there is none to trust. */
export const readLocalRelay = (() => {
  let cached: { value: LocalRelay | undefined } | undefined;
  return (cwd: string = process.cwd()): LocalRelay | undefined => {
    cached ??= { value: load(cwd) };
    return cached.value;
  };
})();

const load = (cwd: string): LocalRelay | undefined => {
  const file = findCard(cwd);
  if (!file) return undefined;
  const ignore = (why: string): undefined => {
    err(`gpu-relay: ignoring ${file}: ${why}`);
    return undefined;
  };
  if (process.platform !== 'win32' && (statSync(file).mode & 0o077) !== 0)
    return ignore('others may read it (chmod 600 it, or restart npm start)');
  let card: Partial<LocalRelayCard>;
  try {
    card = JSON.parse(readFileSync(file, 'utf8')) as Partial<LocalRelayCard>;
  } catch {
    return ignore('not JSON');
  }
  if (!nonEmpty(card.webhook_secret) || !nonEmpty(card.callback_signing_secret) || !nonEmpty(card.url))
    return ignore('incomplete');
  hideSecret(card.webhook_secret);
  hideCallbackSecret(card.callback_signing_secret);
  if (!isLoopbackUrl(card.url)) return ignore('its URL is not a loopback address');
  // A card left by an npm start that is gone (killed, crashed) describes no relay: say so once.
  if (typeof card.pid !== 'number' || !alive(card.pid))
    return ignore('the npm start that wrote it is no longer running');
  return { file, url: card.url, secret: card.webhook_secret, callbackSecret: card.callback_signing_secret };
};
