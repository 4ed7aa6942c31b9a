/**
 * Every alarm's description ends with `RUNBOOK: <section>` (lib/constructs/); that section is a
 * heading of the runbook in docs/operations.md, so the page an alarm sends the operator to exists.
 */
import { readdirSync, readFileSync } from 'node:fs';
import * as path from 'node:path';
import { anchors, slug } from '../../helpers/markdown';

const ROOT = path.resolve(__dirname, '../../..');
const RUNBOOK = path.join(ROOT, 'docs', 'operations.md');

const sources = (dir: string): string[] =>
  readdirSync(dir, { withFileTypes: true }).flatMap((entry) => {
    const full = path.join(dir, entry.name);
    if (entry.isDirectory()) return sources(full);
    return entry.name.endsWith('.ts') ? [full] : [];
  });

/** Section names the alarms point at (a template literal's `${…}` ends the name). */
const sections = [
  ...new Set(
    sources(path.join(ROOT, 'lib')).flatMap((file) =>
      [...readFileSync(file, 'utf8').matchAll(/RUNBOOK: ([A-Za-z0-9]+)/g)].map((m) => m[1]),
    ),
  ),
].sort();

describe('Docs: the runbook', () => {
  it('is pointed at by the alarms', () => {
    expect(sections).toEqual(expect.arrayContaining(['DeadLetterQueueNotEmpty', 'WatchErrors']));
  });

  it.each(sections)('has a section for alarm %s', (section) => {
    expect(anchors(readFileSync(RUNBOOK, 'utf8'))).toContain(slug(section));
  });
});
