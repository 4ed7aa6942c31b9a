/**
 * HMAC-SHA256 signing shared by request verification, signed callbacks and the CLI.
 * Signature v1 (the spec's): the raw body, or `<timestamp>.<body>` when a timestamp is sent (replay
 * window). Signature v2 (issue 29): `v2.<timestamp>.<METHOD>.<path with query>.<raw body>`, sent as
 * `X-Webhook-Signature: v2=<hex>`, so a signature binds the method and the route too.
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

/** The `X-Webhook-Signature` prefix of a v2 signature. */
export const V2_PREFIX = 'v2=';

/** The signature versions a relay accepts (SIGNATURE_VERSIONS). */
export type SignatureVersion = 'v1' | 'v2';

/**
 * The bytes a v2 signature covers: `v2.<timestamp>.<METHOD>.<pathWithQuery>.<body>`, the method in
 * upper case, the path with its query string exactly as sent, the raw body bytes (empty for a GET).
 */
export const signedBytesV2 = (
  timestamp: string,
  method: string,
  pathWithQuery: string,
  body: string | Buffer = '',
): Buffer => {
  const raw = typeof body === 'string' ? Buffer.from(body, 'utf8') : body;
  return Buffer.concat([Buffer.from(`v2.${timestamp}.${method.toUpperCase()}.${pathWithQuery}.`, 'utf8'), raw]);
};

/** The X-Webhook-Signature value of a v2 signature: `v2=` and the lowercase hex HMAC-SHA256. */
export const signatureV2 = (
  secret: string,
  timestamp: string,
  method: string,
  pathWithQuery: string,
  body: string | Buffer = '',
): string => `${V2_PREFIX}${hmacHex(secret, signedBytesV2(timestamp, method, pathWithQuery, body))}`;

/** An X-Webhook-Signature value split into its version and hex digest (`v2=<hex>` is v2, a bare digest v1). */
export const parseSignatureHeader = (value: string): { readonly version: SignatureVersion; readonly hex: string } =>
  value.startsWith(V2_PREFIX) ? { version: 'v2', hex: value.slice(V2_PREFIX.length) } : { version: 'v1', hex: value };

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
