/**
 * The local relay's address cards: each running `npm start` writes where it listens and the secrets it
 * runs with to `.relay/local-<port>.json` (mode 0600, in a git-ignored folder, removed on stop), so the
 * CLI can talk to it with nothing set. One card per running relay, keyed by its port: a second
 * `npm start` on another port neither overwrites nor removes the first one's. Both sides use these
 * names; the CLI trusts a card only for a loopback URL.
 */

/** The cards' folder, relative to the directory `npm start` runs in (the CLI looks there and upwards). */
export const LOCAL_RELAY_DIR = '.relay';

/** The card of the relay listening on `port`, relative to the directory `npm start` runs in. */
export const localRelayFile = (port: number | string): string => `${LOCAL_RELAY_DIR}/local-${port}.json`;

/** Card file names inside LOCAL_RELAY_DIR. */
export const LOCAL_RELAY_CARD_NAME = /^local-\d{1,5}\.json$/;

export interface LocalRelayCard {
  /** The relay's base URL, always loopback (http://127.0.0.1:<port>). */
  readonly url: string;
  readonly webhook_secret: string;
  /** Standard Webhooks key of the relay's callbacks (whsec_...). */
  readonly callback_signing_secret: string;
  /** The `npm start` process: a card whose process is gone is stale and ignored. */
  readonly pid: number;
  readonly started_at: string;
}

/** True for an http(s) URL whose host is a loopback address (127.0.0.0/8, ::1, localhost). */
export const isLoopbackUrl = (raw: string): boolean => {
  let url: URL;
  try {
    url = new URL(raw);
  } catch {
    return false;
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:') return false;
  const host = url.hostname.toLowerCase();
  return host === 'localhost' || host === '[::1]' || /^127\.\d{1,3}\.\d{1,3}\.\d{1,3}$/.test(host);
};

/** The port of a loopback URL (its scheme's default when none is written), or undefined. */
export const portOfUrl = (raw: string): number | undefined => {
  try {
    const url = new URL(raw);
    return Number(url.port || (url.protocol === 'https:' ? 443 : 80));
  } catch {
    return undefined;
  }
};

/** Two relay URLs name the same local relay: same scheme and port, hosts both loopback or equal. */
export const sameLocalRelay = (a: string, b: string): boolean => {
  let ua: URL;
  let ub: URL;
  try {
    ua = new URL(a);
    ub = new URL(b);
  } catch {
    return false;
  }
  if (ua.protocol !== ub.protocol || portOfUrl(a) !== portOfUrl(b)) return false;
  return ua.hostname === ub.hostname || (isLoopbackUrl(a) && isLoopbackUrl(b));
};
