/**
 * The snippets the docs show (docs/api.md, "Signing a request" and "Verifying callbacks") are the
 * files in examples/, byte for byte, so the e2e test that runs the files (test/e2e/examples.test.ts)
 * also vouches for what the docs show. Every page is read (README.md and docs/*.md), wherever a
 * snippet moves.
 */
import { readdirSync, readFileSync } from 'node:fs';
import * as path from 'node:path';

const ROOT = path.resolve(__dirname, '../../..');
const MARKER = /<!-- example: (\S+) -->\n```[a-z]*\n([\s\S]*?)\n```/g;

const pages = [
  'README.md',
  ...readdirSync(path.join(ROOT, 'docs'))
    .filter((name) => name.endsWith('.md'))
    .map((name) => `docs/${name}`),
].map((page) => [page, readFileSync(path.join(ROOT, page), 'utf8')] as const);

/** Every `<!-- example: file -->` block on every page: page, file, what the page shows. */
const snippets = pages.flatMap(([page, text]) =>
  [...text.matchAll(MARKER)].map((m) => ({ page, file: m[1], shown: m[2] })),
);

describe('Docs: example snippets', () => {
  it('shows each example file once, on some page', () => {
    expect(snippets.map(({ file }) => file).sort()).toEqual([
      'examples/sign-request.mjs',
      'examples/sign-request.sh',
      'examples/sign_request.py',
      'examples/verify-callback.mjs',
    ]);
  });

  it('every example marker is followed by its code block', () => {
    const marked = pages.reduce((n, [, text]) => n + (text.match(/<!-- example: /g)?.length ?? 0), 0);
    expect(marked).toBe(snippets.length);
  });

  it.each(snippets.map((s) => [s.file, s.page, s.shown] as const))(
    '%s is shown in %s exactly as it is',
    (file, _page, shown) => {
      expect(shown).toBe(readFileSync(path.join(ROOT, file), 'utf8').replace(/\n+$/, ''));
    },
  );
});
