/**
 * The snippets shown in "Calling the relay" are the files in examples/, byte for byte, so the e2e
 * test that runs the files also vouches for what the README shows.
 */
import { existsSync, readFileSync } from 'node:fs';
import * as path from 'node:path';

const ROOT = path.resolve(__dirname, '../../..');
const MARKER = /<!-- example: (\S+) -->\n```[a-z]*\n([\s\S]*?)\n```/g;

/** The README's "Calling the relay" section. */
const pages = ['README.md']
  .filter((page) => existsSync(path.join(ROOT, page)))
  .map((page) => [page, readFileSync(path.join(ROOT, page), 'utf8')] as const)
  .filter(([, text]) => text.includes('<!-- example: '));

describe('Docs: Calling the relay', () => {
  it('has a page with example snippets', () => {
    expect(pages.length).toBeGreaterThan(0);
  });

  it.each(pages)('%s shows every example file exactly as it is', (_page, text) => {
    // Act
    const snippets = [...text.matchAll(MARKER)].map((m) => [m[1], m[2]] as const);
    // Assess
    expect(snippets.map(([file]) => file).sort()).toEqual(
      ['examples/sign-request.mjs', 'examples/sign-request.sh', 'examples/sign_request.py', 'examples/verify-callback.mjs'],
    );
    for (const [file, shown] of snippets) {
      expect({ file, shown }).toEqual({ file, shown: readFileSync(path.join(ROOT, file), 'utf8').replace(/\n+$/, '') });
    }
  });
});
