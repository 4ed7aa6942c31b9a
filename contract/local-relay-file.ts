/**
 * The local relay's address card: `npm start` writes where it listens and the secrets it runs with to
 * `.relay/local.json` (mode 0600, in a git-ignored folder, removed on stop), so the CLI can talk to it
 * with nothing set. Both sides use these names; the CLI trusts the card only for a loopback URL.
 */

/** The card's path, relative to the directory `npm start` runs in (the CLI looks there and upwards). */
export const LOCAL_RELAY_DIR = '.relay';
export const LOCAL_RELAY_FILE = `${LOCAL_RELAY_DIR}/local.json`;

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
