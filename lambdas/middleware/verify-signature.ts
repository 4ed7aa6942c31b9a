/**
 * X-Webhook-Signature (order-relay.md §5, hardening issue, issue 29): lowercase hex HMAC-SHA256 with
 * the webhook secret (or the caller key's secret with X-Webhook-Key-Id), compared in constant time
 * against every accepted secret (the current one and, during a rotation, the previous one).
 *
 * Signature v2 (`v2=<hex>`): over `v2.<timestamp>.<METHOD>.<path with query>.<raw body>` (empty
 * body for a GET); X-Webhook-Timestamp is required with it. It binds the method and the route, so a
 * captured request cannot be sent to another route.
 *
 * Signature v1 (a bare hex digest, accepted where SIGNATURE_VERSIONS is `v1,v2`): the raw body, or
 * with X-Webhook-Timestamp `<timestamp>.<body>`; bodiless signed GETs sign the request path with its
 * query string instead of a body. `requireTimestamp` makes the timestamp mandatory. Routes that
 * need v2 (`requireV2`: the admin routes) and every request naming a caller key refuse v1 whatever
 * the setting: 401 `signature v2 required for this route` when the v1 signature is otherwise valid,
 * else 401 `Invalid signature`.
 *
 * Any timestamp must be within ±300 s. A signature that matches none of the accepted secrets is
 * checked once more against the secrets read again (`secrets({ fresh: true })`; the adapter decides
 * how often that may bypass its cache), so a secret rotated after the cache was filled verifies at once.
 *
 * The verified signature is left on the event (`event.signature`) for the replay claim
 * (signature-claim.ts). Neither the signature nor the secrets are ever logged.
 */
import type middy from '@middy/core';
import { DEFAULT_CALLER, scopeRefusal, type Caller, type Scope } from '../domain/teams/caller-keys';
import { parseSignatureHeader, signatureMatches, signedBytes, signedBytesV2, timestampFresh } from '../domain/signing';
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
  /** What a v1 signature covers: the body, or (bodiless GETs) the path with its query string. @default 'body' */
  readonly covers?: 'body' | 'path';
  /** SIGNATURE_VERSIONS: `v1,v2` also accepts v1 signatures. @default 'v1,v2' */
  readonly versions?: () => string;
  /** The route needs v2 whatever `versions` says (the admin routes). @default false */
  readonly requireV2?: boolean;
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

/** The message of a v1 signature that verifies where only v2 is accepted. */
export const V2_REQUIRED_MESSAGE = 'signature v2 required for this route';

/** What the signature check verified, for the replay claim after it. */
export type VerifiedSignature = NonNullable<RelayEvent['signature']>;

const reject = (reason: string, message: string): Error => {
  countMetric(MetricName.SignatureRejected);
  logger.info('signature rejected', { reason });
  return httpError(401, message);
};

export const verifySignature = (options: VerifySignatureOptions): middy.MiddlewareObj<RelayEvent> => {
  const now = options.now ?? Date.now;
  const before: middy.MiddlewareFn<RelayEvent> = async ({ event }) => {
    const header = headerValue(event, SIGNATURE_HEADER)?.trim();
    if (!header) throw reject('missing', 'Missing signature');
    const { version, hex } = parseSignatureHeader(header);

    const keyId = headerValue(event, KEY_ID_HEADER)?.trim() || undefined;
    const v1Allowed =
      !options.requireV2 && keyId === undefined && (options.versions?.() ?? 'v1,v2').split(',').includes('v1');

    const timestamp = headerValue(event, TIMESTAMP_HEADER)?.trim() || undefined;
    const required =
      version === 'v2' ||
      (typeof options.requireTimestamp === 'function' ? options.requireTimestamp() : options.requireTimestamp === true);
    if (!timestamp) {
      if (required) throw reject('missing timestamp', 'Missing timestamp');
    } else if (!timestampFresh(timestamp, now())) {
      throw reject('stale timestamp', 'Stale or invalid timestamp');
    }

    const signed =
      version === 'v2'
        ? signedBytesV2(
            timestamp ?? '',
            event.requestContext?.http?.method ?? 'POST',
            signedPath(event),
            (event.requestContext?.http?.method ?? 'POST').toUpperCase() === 'GET' ? Buffer.alloc(0) : rawBodyOf(event),
          )
        : signedBytes(options.covers === 'path' ? Buffer.from(signedPath(event), 'utf8') : rawBodyOf(event), timestamp);
    // A v1 signature where only v2 is accepted is refused either way; the text says which.
    const accept = (): void => {
      if (version === 'v1' && !v1Allowed) throw reject('v1 where v2 is required', V2_REQUIRED_MESSAGE);
      event.signature = {
        version,
        hex: hex.toLowerCase(),
        ...(timestamp !== undefined ? { timestamp } : {}),
        ...(keyId !== undefined ? { keyId } : {}),
      };
    };

    if (keyId !== undefined) {
      // Unknown, revoked, expired or mismatched: the same 401, no hint which.
      let key: ResolvedKey | undefined;
      try {
        key = options.callerKeys ? await options.callerKeys(keyId.slice(0, 64)) : undefined;
      } catch (error) {
        logger.error('caller keys unavailable', { error_name: error instanceof Error ? error.name : 'unknown' });
        throw httpError(503, 'Signature verification unavailable; retry later');
      }
      if (!key) throw reject('unknown or unusable key', 'Invalid signature');
      if (!signatureMatches([key.secret], signed, hex)) throw reject('mismatch', 'Invalid signature');
      accept();
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
    if (signatureMatches(secrets, signed, hex)) return accept();
    // Perhaps signed with a secret rotated since the adapter cached its values: one more look.
    let fresh: readonly string[] = secrets;
    try {
      fresh = await options.secrets({ fresh: true });
    } catch (error) {
      // The cached secrets were readable a moment ago; a failed re-read refuses like a mismatch.
      logger.warn('webhook secret re-read failed', { error_name: error instanceof Error ? error.name : 'unknown' });
    }
    const changed = fresh.length !== secrets.length || fresh.some((s, i) => s !== secrets[i]);
    if (changed && signatureMatches(fresh, signed, hex)) return accept();
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
