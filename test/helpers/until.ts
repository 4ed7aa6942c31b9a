/** Waiting on a condition in e2e tests: a deadline, never a fixed sleep. */

/** Resolves once `condition` holds, polling every 100 ms; rejects with `what` after `timeoutMs`. */
export const waitUntil = async (
  condition: () => boolean | Promise<boolean>,
  what: string,
  timeoutMs: number,
): Promise<void> => {
  const deadline = Date.now() + timeoutMs;
  while (!(await condition())) {
    if (Date.now() > deadline) throw new Error(`timed out after ${timeoutMs} ms waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
};
