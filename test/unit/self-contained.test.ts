/**
 * The repository reads nothing outside itself: the specs and recorded samples beside a developer's
 * checkout (the sibling folder of specs) exist on no user's machine, so a product or test file that names them
 * breaks every fresh clone. Recorded answers the tests need live in test/fixtures/marketplace/
 * (SOURCES.md names where each came from).
 */
import { mkdirSync, readdirSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import { join, relative } from 'node:path';

const ROOT = join(__dirname, '../..');
const FOLDERS = ['test', 'lambdas', 'local', 'lib', 'bench', 'cli', 'scripts', 'contract', 'bin', 'examples'];
// Split so that this file does not name what it looks for.
const FORBIDDEN = [['..', 'shared'].join('/'), ['shared', 'spec'].join('/')];

const filesUnder = (dir: string): string[] =>
  readdirSync(dir).flatMap((name) => {
    const path = join(dir, name);
    if (name === 'node_modules' || name.startsWith('.')) return [];
    return statSync(path).isDirectory() ? filesUnder(path) : [path];
  });

/** `path: line` for every line of `files` that names a place outside the repository. */
const outsideReferences = (files: string[]): string[] =>
  files.flatMap((file) =>
    readFileSync(file, 'utf8')
      .split('\n')
      .flatMap((line, index) =>
        FORBIDDEN.some((needle) => line.includes(needle)) ? [`${relative(ROOT, file)}:${index + 1}`] : [],
      ),
  );

describe('the repository is self-contained', () => {
  it.each(FOLDERS)('no file under %s/ names a path outside the repository', (folder) => {
    const dir = join(ROOT, folder);
    const files = (() => {
      try {
        return filesUnder(dir);
      } catch {
        return [];
      }
    })();
    expect(outsideReferences(files)).toEqual([]);
  });

  it('the check finds a reference when one is there', () => {
    const tmp = join(ROOT, 'node_modules', '.cache', 'self-contained-probe.ts');
    mkdirSync(join(ROOT, 'node_modules', '.cache'), { recursive: true });
    writeFileSync(tmp, `const dir = '${FORBIDDEN[0]}/spec/live-v1';\n`);
    expect(outsideReferences([tmp])).toHaveLength(1);
  });
});
