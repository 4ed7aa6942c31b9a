/** How a full `npm run bench` orders its wait-bound sections (bench/run.ts). */

/**
 * The wait-bound sections longest first, by their wall time in the last recorded run (a section
 * with none first of all): the longest start at once, the short ones fill the gaps, so the batch
 * ends about when its longest section does.
 */
export const longestFirst = (
  sections: readonly string[],
  lastSeconds: Readonly<Record<string, { readonly seconds?: number } | undefined>>,
): string[] =>
  [...sections].sort(
    (a, b) =>
      (lastSeconds[b]?.seconds ?? Number.POSITIVE_INFINITY) - (lastSeconds[a]?.seconds ?? Number.POSITIVE_INFINITY),
  );
