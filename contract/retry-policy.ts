/**
 * The retry policy, in one place (issue 22, item 3): order-relay.md §3 says a failed task step is
 * "retried up to 3 times, delay of 2 to the power of the retry count seconds". The state machine's
 * Retry (lib/constructs/order-workflow.ts), the job worker's SQS visibility delays
 * (lambdas/domain/requests/jobs.ts) and the queue's redrive (`maxReceiveCount`, contract/resources.ts) all read
 * it from here; so do the rolling windows of the rate limit and the hourly order cap.
 */

export const RETRY_POLICY = {
  /** Retries after the first attempt: attempts 1..4, then the failure result. */
  retries: 3,
  /** Delay before retry n (1-based) is firstDelaySeconds × backoffRate^(n-1): 2, 4, 8 s. */
  firstDelaySeconds: 2,
  backoffRate: 2,
  /**
   * Receives the job queue allows before SQS moves a message to the dead-letter queue: the job gives
   * up itself after retries + 1 receives; one spare receive covers a worker that dies mid-job.
   */
  spareReceives: 1,
} as const;

/** The job queue's redrive threshold. */
export const MAX_RECEIVE_COUNT = RETRY_POLICY.retries + 1 + RETRY_POLICY.spareReceives;

/** Delay before the retry that follows the failure of attempt `attempt` (1-based): 2, 4, 8 s. */
export const retryDelaySecondsAfter = (attempt: number): number =>
  RETRY_POLICY.firstDelaySeconds * RETRY_POLICY.backoffRate ** (Math.max(1, Math.floor(attempt)) - 1);

/** The rolling window of the per-address rate limit (order-relay.md §8: 60 per rolling 60 s). */
export const RATE_WINDOW_MS = 60_000;
/** The rolling window of the hourly order cap (order-relay.md §8). */
export const QUOTA_WINDOW_MS = 3_600_000;
