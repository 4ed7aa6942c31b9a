/**
 * zod/mini loads no locale: an issue without a message of ours reads just "Invalid input". The
 * diagnostics that quote zod's own texts (an unreadable marketplace answer, which can end up as a
 * job's `error`, the workflow state, the environment, a stored record) pass this per call, so they
 * read exactly as they did with classic zod ("Invalid input: expected number, received string").
 * The request schemas never need it: every 400 text there is explicit (lambdas/http/requests.ts).
 */
import { en } from 'zod/v4/locales';
import type * as z from 'zod/mini';

let english: z.core.$ZodErrorMap | undefined;

/**
 * `en` alone from zod/v4/locales (~3 KB): `z.locales.en` from zod/mini's namespace would bundle every
 * locale. Its tables are built on the first issue that needs a text (a parse that fails), not at
 * every cold start of every function that bundles this module (BENCHMARKS.md §15, "Third pass").
 */
export const ENGLISH_TEXTS: z.core.ParseContext<z.core.$ZodIssue> = {
  error: (issue) => (english ??= en().localeError)(issue),
};

/**
 * A schema built on its first use, once (issue 40 §1): a module-level schema is built at every cold
 * start of every function that bundles its module, whether or not the function ever parses with it
 * (the stored task's shapes in an accept route, which records tasks but never reads one). Each such
 * export is a getter: `TaskOriginSchema().safeParse(…)`.
 */
export const builtOnFirstUse = <T>(build: () => T): (() => T) => {
  let schema: T | undefined;
  return () => (schema ??= build());
};
