/**
 * X-Webhook-Signature (order-relay.md §5, hardening issue): lowercase hex HMAC-SHA256 of the raw
 * body bytes with the webhook secret, compared in constant time against every accepted secret (the
 * current one and, during a rotation, the previous one).
 *
 * Replay window (opt-in): with X-Webhook-Timestamp (Unix seconds) the signature covers
 * `<timestamp>.<body>` and the timestamp must be within ±300 s; `requireTimestamp` makes it
 * mandatory. Bodiless signed GETs sign the request path with its query string instead of a body.
 *
 * A signature that matches none of the accepted secrets is checked once more against the secrets
 * read again (`secrets({ fresh: true })`; the adapter decides how often that may bypass its cache),
 * so a secret rotated after the cache was filled verifies at once.
 *
 * Neither the signature nor the secrets are ever logged.
 */
import type middy from '@middy/core';
import { DEFAULT_CALLER, scopeRefusal, type Caller, type Scope } from '../domain/caller-keys';
import { signatureMatches, signedBytes, timestampFresh } from '../domain/signing';
import { countMetric, logger, MetricName } from '../adapters/observability';
import type { SecretReadOptions } from '../adapters/secrets';
import { headerValue, httpError, rawBodyOf, type RelayEvent } from './http';

export const SIGNATURE_HEADER = 'X-Webhook-Signature';
export const TIMESTAMP_HEADER = 'X-Webhook-Timestamp';
/** Names the caller key whose secret signed the request (issue 24); absent = the shared webhook secret. */
export const KEY_ID_HEADER = 'X-Webhook-Key-Id';

/** A usable caller key: who it is and its secret (decrypted, in memory only). */
export interface ResolvedKey {
  readonly caller: Caller;
  readonly secret: string;
}

export interface VerifySignatureOptions {
  /**
   * Accepted secrets, current first. A port: the secrets adapter caches values and picks up rotation;
   * `fresh` asks it to read past its cache (it may answer from the cache if it did so recently).
   */
  readonly secrets: (read?: SecretReadOptions) => Promise<readonly string[]>;
  /** REQUIRE_WEBHOOK_TIMESTAMP. @default false */
  readonly requireTimestamp?: boolean | (() => boolean);
  /** What the signature covers: the body, or (bodiless GETs) the path with its query string. @default 'body' */
  readonly covers?: 'body' | 'path';
  /**
   * Caller keys (X-Webhook-Key-Id): the usable key of a name, or undefined for an unknown, revoked or
   * expired one. Unwired: every request naming a key is refused (401).
   */
  readonly callerKeys?: (name: string) => Promise<ResolvedKey | undefined>;
  /** @default Date.now */
  readonly now?: () => number;
}

/** The bytes a bodiless request signs: rawPath plus `?query` when there is one (DESIGN.md). */
export const signedPath = (event: Pick<RelayEvent, 'rawPath' | 'rawQueryString'>): string =>
  event.rawPath + (event.rawQueryString ? `?${event.rawQueryString}` : '');

const reject = (reason: string, message: string): Error => {
  countMetric(MetricName.SignatureRejected);
  logger.info('signature rejected', { reason });
  return httpError(401, message);
};

export const verifySignature = (options: VerifySignatureOptions): middy.MiddlewareObj<RelayEvent> => {
  const now = options.now ?? Date.now;
  const before: middy.MiddlewareFn<RelayEvent> = async ({ event }) => {
    const signature = headerValue(event, SIGNATURE_HEADER)?.trim();
    if (!signature) throw reject('missing', 'Missing signature');

    const timestamp = headerValue(event, TIMESTAMP_HEADER)?.trim();
    const required =
      typeof options.requireTimestamp === 'function' ? options.requireTimestamp() : options.requireTimestamp === true;
    if (!timestamp) {
      if (required) throw reject('missing timestamp', 'Missing timestamp');
    } else if (!timestampFresh(timestamp, now())) {
      throw reject('stale timestamp', 'Stale or invalid timestamp');
    }

    const payload = options.covers === 'path' ? Buffer.from(signedPath(event), 'utf8') : rawBodyOf(event);
    const signed = signedBytes(payload, timestamp || undefined);

    const keyId = headerValue(event, KEY_ID_HEADER)?.trim();
    if (keyId !== undefined && keyId !== '') {
      // Unknown, revoked, expired or mismatched: the same 401, no hint which.
      let key: ResolvedKey | undefined;
      try {
        key = options.callerKeys ? await options.callerKeys(keyId.slice(0, 64)) : undefined;
      } catch (error) {
        logger.error('caller keys unavailable', { error_name: error instanceof Error ? error.name : 'unknown' });
        throw httpError(503, 'Signature verification unavailable; retry later');
      }
      if (!key) throw reject('unknown or unusable key', 'Invalid signature');
      if (!signatureMatches([key.secret], signed, signature)) throw reject('mismatch', 'Invalid signature');
      event.caller = key.caller;
      return;
    }

    let secrets: readonly string[];
    try {
      secrets = await options.secrets();
    } catch (error) {
      logger.error('webhook secret unavailable', { error });
      throw httpError(503, 'Signature verification unavailable; retry later');
    }
    if (secrets.length === 0) {
      // Nothing could ever verify: an operator must configure WEBHOOK_SECRET(_ARN).
      logger.error('no webhook secret configured; every signed request is refused');
      throw reject('no secret configured', 'Invalid signature');
    }

    event.caller = DEFAULT_CALLER;
    if (signatureMatches(secrets, signed, signature)) return;
    // Perhaps signed with a secret rotated since the adapter cached its values: one more look.
    let fresh: readonly string[] = secrets;
    try {
      fresh = await options.secrets({ fresh: true });
    } catch (error) {
      // The cached secrets were readable a moment ago; a failed re-read refuses like a mismatch.
      logger.warn('webhook secret re-read failed', { error_name: error instanceof Error ? error.name : 'unknown' });
    }
    const changed = fresh.length !== secrets.length || fresh.some((s, i) => s !== secrets[i]);
    if (changed && signatureMatches(fresh, signed, signature)) return;
    throw reject('mismatch', 'Invalid signature');
  };
  return { name: 'verifySignature', before };
};

/**
 * After the signature: the verified caller must hold `scope` (issue 24), else 403
 * `key <name> may not <scope>` and nothing is queued. The default key holds every scope.
 */
export const requireScope = (scope: Scope): middy.MiddlewareObj<RelayEvent> => ({
  name: 'requireScope',
  before: async ({ event }) => {
    const refusal = scopeRefusal(event.caller ?? DEFAULT_CALLER, scope);
    if (refusal === undefined) return;
    logger.info('scope refused', { key: (event.caller ?? DEFAULT_CALLER).key, scope });
    throw httpError(403, refusal);
  },
});
