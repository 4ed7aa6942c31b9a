/**
 * HMAC-SHA256 signing shared by request verification, signed callbacks and the CLI.
 * Signed bytes: the raw body, or `<timestamp>.<body>` when a timestamp is sent (replay window).
 */
import { createHmac, timingSafeEqual } from 'node:crypto';

/** Lowercase hex HMAC-SHA256 of `data` keyed with `secret`. */
export const hmacHex = (secret: string, data: string | Buffer): string =>
  createHmac('sha256', secret).update(data).digest('hex');

/** The bytes a signature covers: `body`, or `<timestamp>.<body>` when a timestamp is given. */
export const signedBytes = (body: string | Buffer, timestamp?: string): Buffer => {
  const raw = typeof body === 'string' ? Buffer.from(body, 'utf8') : body;
  return timestamp === undefined ? raw : Buffer.concat([Buffer.from(`${timestamp}.`, 'utf8'), raw]);
};

/** Constant-time check of a hex signature against every accepted secret (current, then previous). */
export const signatureMatches = (secrets: readonly string[], data: Buffer, signatureHex: string): boolean => {
  if (!/^[0-9a-fA-F]{64}$/.test(signatureHex)) return false;
  const received = Buffer.from(signatureHex.toLowerCase(), 'hex');
  let ok = false;
  for (const secret of secrets) {
    const expected = createHmac('sha256', secret).update(data).digest();
    // Check every secret (no early exit) so timing does not reveal which one matched.
    if (expected.length === received.length && timingSafeEqual(expected, received)) ok = true;
  }
  return ok;
};

/** Replay window for timestamped requests and callbacks (seconds either side of now). */
export const REPLAY_WINDOW_SECONDS = 300;

/** True when `timestamp` (Unix seconds, digits only) is within the replay window of `nowMs`. */
export const timestampFresh = (timestamp: string, nowMs: number, windowSeconds = REPLAY_WINDOW_SECONDS): boolean =>
  /^\d{1,12}$/.test(timestamp) && Math.abs(nowMs / 1000 - Number(timestamp)) <= windowSeconds;
