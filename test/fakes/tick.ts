/** Lets other pending promises run, so concurrent use cases really interleave. */
export const tick = (): Promise<void> => new Promise<void>((resolve) => setImmediate(resolve));
