/** The job's soft time limit, enforced around the use case by the worker (the domain sets no timers). */
import { SOFT_TIME_LIMIT_SECONDS } from '../../../contract/limits';
import { SoftTimeoutError } from '../../domain/errors';

/**
 * Runs `work` under the soft time limit: rejects with SoftTimeoutError when it has not settled after
 * `limitMs`. The work itself is not cancelled (the ports take no signal); the worker's hard timeout
 * (600 s) bounds it, and the result it might still produce is ignored.
 */
export const withSoftDeadline = async <T>(
  work: Promise<T>,
  limitMs: number,
  limitSeconds = SOFT_TIME_LIMIT_SECONDS,
): Promise<T> => {
  let timer: ReturnType<typeof setTimeout> | undefined;
  const deadline = new Promise<never>((_, reject) => {
    timer = setTimeout(
      () => reject(new SoftTimeoutError(`Task exceeded its soft time limit of ${limitSeconds} s`)),
      limitMs,
    );
  });
  try {
    return await Promise.race([work, deadline]);
  } finally {
    clearTimeout(timer);
  }
};
