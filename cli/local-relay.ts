/**
 * The quick path: the CLI talks to a relay `npm start` runs here, from its address card
 * `.relay/local-<port>.json` (contract/local-relay-file.ts), found in the current directory or the
 * nearest parent. A card is trusted only when its URL is loopback, its process is alive and no one
 * else may read it (mode 0600); otherwise it is ignored, with a warning. cli/connection.ts decides
 * which card applies and which of its values fill what the user did not set.
 */
import { readFileSync, readdirSync, statSync } from 'node:fs';
import * as path from 'node:path';
import { LOCAL_RELAY_CARD_NAME, LOCAL_RELAY_DIR, isLoopbackUrl } from '../contract/local-relay-file';
import type { LocalRelayCard } from '../contract/local-relay-file';
import { err, hideCallbackSecret, hideSecret } from './output';

export interface LocalRelay {
  readonly file: string;
  readonly url: string;
  readonly secret: string;
  readonly callbackSecret: string;
}

/** The card files of the nearest `.relay` folder holding any, from `from` upwards. */
const findCards = (from: string): string[] => {
  for (let dir = path.resolve(from); ; dir = path.dirname(dir)) {
    const folder = path.join(dir, LOCAL_RELAY_DIR);
    try {
      const names = readdirSync(folder)
        .filter((name) => LOCAL_RELAY_CARD_NAME.test(name))
        .sort();
      if (names.length) return names.map((name) => path.join(folder, name));
    } catch {
      // Not here: look one folder up.
    }
    if (path.dirname(dir) === dir) return [];
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

/** The running local relays' cards, read once per run; empty when there is none to trust. */
export const readLocalRelays = (() => {
  let cached: LocalRelay[] | undefined;
  return (cwd: string = process.cwd()): readonly LocalRelay[] => {
    cached ??= findCards(cwd)
      .map(load)
      .filter((card): card is LocalRelay => card !== undefined);
    return cached;
  };
})();

const load = (file: string): LocalRelay | undefined => {
  const ignore = (why: string): undefined => {
    err(`gpu-relay: ignoring ${file}: ${why}`);
    return undefined;
  };
  let mode: number;
  try {
    mode = statSync(file).mode;
  } catch {
    return undefined; // Removed meanwhile: that relay just stopped.
  }
  if (process.platform !== 'win32' && (mode & 0o077) !== 0)
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
