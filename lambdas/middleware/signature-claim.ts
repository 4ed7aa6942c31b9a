/**
 * A signature is good once, on one route (issue 29): after the signature check, every signed route
 * claims its verified signature (with the caller key's id) for the route it reached. The claim is
 * keyed by the signature and key id alone, so the same signature on another route, within the
 * replay window and the clock margin, is refused with 401 `Invalid signature` before anything is
 * parsed or queued. The same bytes on the same route pass here; the accept routes answer them with
 * the first task (accept-route.ts), the read routes answer them again.
 *
 * A v1 signature without a timestamp (the spec's body-only scheme, allowed only where
 * SIGNATURE_VERSIONS is `v1,v2`) has no time of its own: its claim lasts the window and margin from
 * its first use.
 */
import type middy from '@middy/core';
import { countMetric, logger, MetricName } from '../adapters/observability';
import type { IdempotencyStore } from '../domain/ports';
import { REPLAY_WINDOW_SECONDS } from '../domain/signing';
import { httpError, type RelayEvent } from './http';
import type { VerifiedSignature } from './verify-signature';

/** Kept beyond the replay window, for clocks of different instances that disagree by up to this much. */
export const SIGNED_REQUEST_CLOCK_MARGIN_SECONDS = 60;

/** The claim of a verified signature: its key (signature and key id alone) and how long it must bind. */
export const signatureClaimOf = (
  signature: VerifiedSignature,
  nowMs: number,
): { readonly key: string; readonly ttlSeconds: number } => {
  const nowSeconds = Math.floor(nowMs / 1000);
  const from = signature.timestamp !== undefined ? Number(signature.timestamp) : nowSeconds;
  const until = from + REPLAY_WINDOW_SECONDS + SIGNED_REQUEST_CLOCK_MARGIN_SECONDS;
  return {
    key: `route:${signature.keyId ?? ''}:${signature.hex}`,
    ttlSeconds: Math.max(1, until - nowSeconds),
  };
};

export interface ClaimSignatureOptions {
  /** The route's id: what the claim binds the signature to. */
  readonly routeId: string;
  /** The signed-request store; unwired (some unit tests) = nothing claimed. */
  readonly store: () => IdempotencyStore | undefined;
  /** @default Date.now */
  readonly now?: () => number;
}

export const claimSignature = (options: ClaimSignatureOptions): middy.MiddlewareObj<RelayEvent> => ({
  name: 'claimSignature',
  before: async ({ event }) => {
    const signature = event.signature;
    const store = options.store();
    if (!signature || !store) return;
    const nowMs = (options.now ?? Date.now)();
    const { key, ttlSeconds } = signatureClaimOf(signature, nowMs);
    let bound: string;
    try {
      bound = await store.claim(key, options.routeId, nowMs, ttlSeconds);
    } catch (error) {
      logger.error('signature claim unavailable', { error_name: error instanceof Error ? error.name : 'unknown' });
      throw httpError(503, 'Signature verification unavailable; retry later');
    }
    if (bound === options.routeId) return;
    countMetric(MetricName.SignatureRejected);
    logger.info('signature rejected', { reason: 'replayed on another route' });
    throw httpError(401, 'Invalid signature');
  },
});
