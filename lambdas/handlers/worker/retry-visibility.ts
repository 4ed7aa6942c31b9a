/**
 * A received job message's next appearance: the worker's retry delay (2^retry s) as an SQS visibility
 * timeout, and the port that sets it (sqs-message-visibility.ts: on SQS, loaded only when a job is retried).
 */
import { retryDelaySeconds } from '../../domain/requests/jobs';

/** SQS caps a message's visibility timeout at 12 hours. */
const MAX_VISIBILITY_SECONDS = 43_200;

/**
 * The same delay as an SQS visibility timeout: whole seconds (SQS has no finer unit), scaled by
 * `baseMs` (1000 in production; tests shrink it, and anything under a second becomes 0 = at once).
 */
export const retryVisibilitySeconds = (receiveCount: number, baseMs = 1_000): number =>
  Math.min(MAX_VISIBILITY_SECONDS, Math.max(0, Math.floor((retryDelaySeconds(receiveCount) * baseMs) / 1_000)));

/** Sets when a received message becomes visible again. */
export interface MessageVisibility {
  change(receiptHandle: string, visibilityTimeoutSeconds: number): Promise<void>;
}
