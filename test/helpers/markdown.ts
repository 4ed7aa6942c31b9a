/** Markdown links and GitHub heading anchors, for the docs tests (test/unit/docs/). */
import * as path from 'node:path';

export interface Problem {
  readonly page: string;
  readonly link: string;
  readonly reason: string;
}

/** Lines outside fenced code blocks. */
const outsideFences = (text: string): string[] => {
  const lines: string[] = [];
  let fence: string | undefined;
  for (const line of text.split('\n')) {
    const marker = /^\s*(`{3,}|~{3,})/.exec(line)?.[1];
    if (marker && (fence === undefined || marker.startsWith(fence))) {
      fence = fence === undefined ? marker : undefined;
      continue;
    }
    if (fence === undefined) lines.push(line);
  }
  return lines;
};

/** Lines outside fenced code blocks, with inline code spans blanked (a link inside code is not a link). */
const prose = (text: string): string[] => outsideFences(text).map((line) => line.replace(/`[^`]*`/g, '``'));

/** GitHub's anchor of a heading: markup dropped, lowercased, punctuation removed, each space a hyphen. */
export const slug = (heading: string): string =>
  heading
    .replace(/\[([^\]]*)\]\([^)]*\)/g, '$1')
    .replace(/`/g, '')
    .toLowerCase()
    .replace(/[^\p{L}\p{N}\p{M} _-]/gu, '')
    .replace(/ /g, '-');

/** Every anchor a page offers: one per heading, repeats numbered -1, -2 … as GitHub does. */
export const anchors = (text: string): Set<string> => {
  const seen = new Map<string, number>();
  const out = new Set<string>();
  for (const line of outsideFences(text)) {
    const heading = /^#{1,6}\s+(.*?)\s*#*\s*$/.exec(line)?.[1];
    if (heading === undefined) continue;
    const base = slug(heading);
    const n = seen.get(base) ?? 0;
    seen.set(base, n + 1);
    out.add(n === 0 ? base : `${base}-${n}`);
  }
  return out;
};

/** The relative links of a page that do not resolve; `read` returns a file's text, or undefined when it does not exist. */
export const brokenLinks = (
  page: string,
  text: string,
  read: (file: string) => { kind: 'file'; text: string } | { kind: 'dir' } | undefined,
  pending: ReadonlySet<string> = new Set(),
): Problem[] => {
  const problems: Problem[] = [];
  for (const line of prose(text)) {
    for (const match of line.matchAll(/\[[^\]]*\]\(\s*<?([^)\s>]+)>?(?:\s+"[^"]*")?\s*\)/g)) {
      const link = match[1];
      if (/^[a-z][a-z0-9+.-]*:/i.test(link)) continue; // https:, mailto: …
      const [target, anchor] = link.split('#', 2) as [string, string | undefined];
      const file =
        target === '' ? page : path.posix.normalize(path.posix.join(path.posix.dirname(page), decodeURI(target)));
      const found = read(file);
      if (found === undefined) {
        if (!pending.has(file)) problems.push({ page, link, reason: `no such file: ${file}` });
        continue;
      }
      if (anchor === undefined || anchor === '') continue;
      if (found.kind !== 'file' || !file.endsWith('.md')) {
        problems.push({ page, link, reason: `#${anchor} on ${file}, which is not a Markdown page` });
      } else if (!anchors(found.text).has(decodeURIComponent(anchor))) {
        problems.push({ page, link, reason: `no heading #${anchor} in ${file}` });
      }
    }
  }
  return problems;
};
