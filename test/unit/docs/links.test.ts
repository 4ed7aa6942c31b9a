/**
 * The README and docs/ stay walkable (issue 22, item 2): every relative link in README.md and
 * docs/*.md names a file or folder that exists and, with `#anchor`, a heading of that page (GitHub's
 * anchors); the README stays at most 250 lines; every docs page says first who it is for.
 */
import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs';
import * as path from 'node:path';
import { brokenLinks } from '../../helpers/markdown';

const ROOT = path.resolve(__dirname, '../../..');

/**
 * Pages other branches of this round add (outbid recovery, budgets, the CLI and Slack). Linked
 * before they land; a link to one of them is checked like any other as soon as the file exists.
 * Empty this list once they are merged.
 */
const PENDING = new Set<string>();

const readRepo = (file: string): { kind: 'file'; text: string } | { kind: 'dir' } | undefined => {
  const full = path.join(ROOT, file);
  if (file.startsWith('..') || !existsSync(full)) return undefined;
  return statSync(full).isDirectory() ? { kind: 'dir' } : { kind: 'file', text: readFileSync(full, 'utf8') };
};

const docs = readdirSync(path.join(ROOT, 'docs'))
  .filter((name) => name.endsWith('.md'))
  .map((name) => `docs/${name}`);
const pages = ['README.md', ...docs];
const text = (page: string): string => readFileSync(path.join(ROOT, page), 'utf8');

describe('Docs: links', () => {
  it.each(pages)('every relative link in %s resolves', (page) => {
    expect(brokenLinks(page, text(page), readRepo, PENDING)).toEqual([]);
  });

  it('finds a missing file, a missing heading and an anchor on a folder; ignores code and URLs', () => {
    // Arrange
    const files: Record<string, string> = {
      'docs/a.md':
        '# A page\n\n## Teams: caller keys\n\n## Second round: prices, `&` in env\n\n## Runbook\n## Runbook\n',
    };
    const read = (file: string) =>
      file === 'examples'
        ? { kind: 'dir' as const }
        : file in files
          ? { kind: 'file' as const, text: files[file] }
          : undefined;
    const page = [
      '[ok](a.md#teams-caller-keys) [ok](#runbook-1) [ok](a.md#second-round-prices--in-env) [ok](../examples)',
      '[url](https://example.com/x.md) `[code](nowhere.md)` [pending](later.md)',
      '```md\n[fenced](nowhere.md)\n```',
      '[gone](gone.md) [bad anchor](a.md#no-such-heading) [dir anchor](../examples#x) [self](#teams)',
    ].join('\n');
    // Act
    const problems = brokenLinks('docs/a.md', page, read, new Set(['docs/later.md']));
    // Assess
    expect(problems.map((p) => p.link)).toEqual(['gone.md', 'a.md#no-such-heading', '../examples#x', '#teams']);
  });
});

describe('Docs: shape', () => {
  it('README.md is at most 250 lines', () => {
    expect(text('README.md').trimEnd().split('\n').length).toBeLessThanOrEqual(250);
  });

  it.each(docs)('%s starts with its title, then one line saying who it is for', (page) => {
    const [title, blank, who] = text(page).split('\n');
    expect({ title: /^# \S/.test(title), blank, who: /\bfor\b/i.test(who ?? '') }).toEqual({
      title: true,
      blank: '',
      who: true,
    });
  });
});
