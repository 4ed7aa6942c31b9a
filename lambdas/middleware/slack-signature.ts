/**
 * Slack request signing (hardening issue): when a Slack signing secret is configured,
 * X-Slack-Signature must be `v0=` + hex HMAC-SHA256 of `v0:<timestamp>:<raw body>`, with
 * X-Slack-Request-Timestamp within 5 minutes. Without a secret the endpoint stays unsigned (spec).
 */
import type middy from '@middy/core';
import { signatureMatches, timestampFresh } from '../domain/signing';
import { countMetric, logger, MetricName } from '../adapters/observability';
import { headerValue, httpError, rawBodyOf, type RelayEvent } from './http';

/** Slack's own replay window. */
export const SLACK_WINDOW_SECONDS = 300;

export interface SlackSignatureOptions {
  /** The signing secret, or undefined when none is configured. */
  readonly secret: () => Promise<string | undefined>;
  /** @default Date.now */
  readonly now?: () => number;
}

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
    if (!secret) return;
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
    if (!signatureMatches([secret], slackBaseString(timestamp, rawBodyOf(event)), signature.slice(3))) throw fail('mismatch');
  };
  return { name: 'verifySlackSignature', before };
};
