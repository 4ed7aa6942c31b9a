/**
 * The notifier's delivery limits and the worst cases they add up to (http-notifier.ts re-exports
 * them), in a module of their own so that a function that budgets its time by them without notifying
 * at every call (the fleet watch, which loads the notifier on first use) does not load the notifier.
 */
/** The notifier's defaults (order-relay.md §8 timeouts); the time-budget test sums the same numbers. */
export const NOTIFIER_DEFAULTS = {
  callbackTimeoutMs: 10_000,
  chatTimeoutMs: 5_000,
  callbackAttempts: 3,
  callbackBackoffMs: 1_000,
  discordMaxWaitMs: 5_000,
  reserveMs: 2_000,
  /** A POST given less than this is not started: it could not complete. */
  minAttemptMs: 500,
} as const;

/** The delivery limits HttpNotifierOptions may override (http-notifier.ts documents each). */
interface Limits {
  readonly callbackTimeoutMs?: number;
  readonly chatTimeoutMs?: number;
  readonly callbackAttempts?: number;
  readonly callbackBackoffMs?: number;
  readonly discordMaxWaitMs?: number;
}

/** Longest a callback delivery can take without a budget: every attempt times out, with the back-off between. */
export const callbackWorstCaseMs = (limits: Limits = {}): number => {
  const attempts = Math.max(1, limits.callbackAttempts ?? NOTIFIER_DEFAULTS.callbackAttempts);
  const backoff = limits.callbackBackoffMs ?? NOTIFIER_DEFAULTS.callbackBackoffMs;
  let total = attempts * (limits.callbackTimeoutMs ?? NOTIFIER_DEFAULTS.callbackTimeoutMs);
  for (let attempt = 1; attempt < attempts; attempt += 1) total += backoff * 2 ** (attempt - 1);
  return total;
};

/** Longest a chat announcement can take (Slack and Discord in parallel; Discord may wait once for retry_after). */
export const chatWorstCaseMs = (limits: Limits = {}): number => {
  const post = limits.chatTimeoutMs ?? NOTIFIER_DEFAULTS.chatTimeoutMs;
  return Math.max(post, post + (limits.discordMaxWaitMs ?? NOTIFIER_DEFAULTS.discordMaxWaitMs) + post);
};
