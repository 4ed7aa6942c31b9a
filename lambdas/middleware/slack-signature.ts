/**
 * Slack request signing (hardening issue): when a Slack signing secret is configured,
 * X-Slack-Signature must be `v0=` + hex HMAC-SHA256 of `v0:<timestamp>:<raw body>`, with
 * X-Slack-Request-Timestamp within 5 minutes. Without a secret the endpoint is unsigned (the spec)
 * only when `allowUnsigned` says so (ALLOW_UNSIGNED_SLACK: true under `npm start`, opt-in in AWS);
 * otherwise every command is refused with 403 and nothing is queued: a public endpoint without a
 * secret would let anyone rent or cancel.
 */
import type middy from '@middy/core';
import { signatureMatches, timestampFresh } from '../domain/signing';
import { countMetric, logger, MetricName } from '../adapters/observability';
import type { SecretReadOptions } from '../adapters/secrets';
import { headerValue, httpError, rawBodyOf, type RelayEvent } from './http';

/** Slack's own replay window. */
export const SLACK_WINDOW_SECONDS = 300;

export interface SlackSignatureOptions {
  /**
   * The signing secret, or undefined when none is configured. `fresh` asks the adapter to read past
   * its cache (after a mismatch: the secret may have been regenerated; it may answer from the cache).
   */
  readonly secret: (read?: SecretReadOptions) => Promise<string | undefined>;
  /** ALLOW_UNSIGNED_SLACK: without a secret, let commands through unverified. @default false (refuse) */
  readonly allowUnsigned?: boolean | (() => boolean);
  /** @default Date.now */
  readonly now?: () => number;
}

/** The answer to a command refused because no signing secret is configured (a 403, nothing queued). */
export const UNSIGNED_SLACK_REFUSED_MESSAGE =
  'Slack commands are disabled: this relay has no Slack signing secret configured';

/** The bytes Slack signs. */
export const slackBaseString = (timestamp: string, rawBody: Buffer): Buffer =>
  Buffer.concat([Buffer.from(`v0:${timestamp}:`, 'utf8'), rawBody]);

export const verifySlackSignature = (options: SlackSignatureOptions): middy.MiddlewareObj<RelayEvent> => {
  const now = options.now ?? Date.now;
  const before: middy.MiddlewareFn<RelayEvent> = async ({ event }) => {
    let secret: string | undefined;
    try {
      secret = await options.secret();
    } catch (error) {
      logger.error('Slack signing secret unavailable', { error });
      throw httpError(503, 'Signature verification unavailable; retry later');
    }
    if (!secret) {
      const allowUnsigned =
        typeof options.allowUnsigned === 'function' ? options.allowUnsigned() : options.allowUnsigned === true;
      if (allowUnsigned) return;
      countMetric(MetricName.SignatureRejected);
      logger.warn(
        'unsigned Slack command refused: no Slack signing secret is configured and ALLOW_UNSIGNED_SLACK is false; set the secret, or opt in with -c allowUnsignedSlack=true',
      );
      throw httpError(403, UNSIGNED_SLACK_REFUSED_MESSAGE);
    }
    const fail = (reason: string) => {
      countMetric(MetricName.SignatureRejected);
      logger.info('Slack signature rejected', { reason });
      return httpError(401, 'Invalid Slack signature');
    };
    const timestamp = headerValue(event, 'X-Slack-Request-Timestamp')?.trim();
    const signature = headerValue(event, 'X-Slack-Signature')?.trim();
    if (!timestamp || !signature) throw fail('missing header');
    if (!timestampFresh(timestamp, now(), SLACK_WINDOW_SECONDS)) throw fail('stale timestamp');
    if (!signature.startsWith('v0=')) throw fail('unknown version');
    const signed = slackBaseString(timestamp, rawBodyOf(event));
    if (signatureMatches([secret], signed, signature.slice(3))) return;
    // Perhaps signed with a secret regenerated in Slack since the adapter cached it: one more look.
    let fresh: string | undefined = secret;
    try {
      fresh = await options.secret({ fresh: true });
    } catch (error) {
      logger.warn('Slack signing secret re-read failed', {
        error_name: error instanceof Error ? error.name : 'unknown',
      });
    }
    if (fresh && fresh !== secret && signatureMatches([fresh], signed, signature.slice(3))) return;
    throw fail('mismatch');
  };
  return { name: 'verifySlackSignature', before };
};
