/**
 * Fails a `z.transform` with a message. A module of its own so that the env contract
 * (lambdas/adapters/env.ts) does not import ./requests.ts: a module a bundle includes brings all its
 * top-level zod schemas along (esbuild cannot tell they are free of side effects), and the functions
 * that read the env but parse no request (workflow steps, worker, fleet watch) need none of them.
 */
import * as z from 'zod/mini';

/** Fails a `z.transform` with `message` (classic zod's `ctx.addIssue` + `z.NEVER`). */
export const refuse = (ctx: z.core.ParsePayload, message: string): never => {
  ctx.issues.push({ code: 'custom', message, input: ctx.value });
  return z.NEVER;
};
