/** Task time limits (order-relay.md §8): enforced by the jobs and the workflow, sized into the functions. */

/** The soft limit: a task still running after this fails with SoftTimeoutError. */
export const SOFT_TIME_LIMIT_SECONDS = 300;
/** The hard limit: the state machine's timeout and the worker function's timeout. */
export const HARD_TIME_LIMIT_SECONDS = 600;
