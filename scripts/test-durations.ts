/**
 * `npm run test:durations -- <file>`: writes test/runner/durations.json (the test order's committed
 * durations, test/runner/sequencer.js) from a `jest --json --outputFile=<file>` run of the whole suite:
 * seconds per test file, rounded to a tenth (a file run by e2e and e2e-live: the longer run).
 */
import { readFileSync, writeFileSync } from 'node:fs';
import * as path from 'node:path';

interface JestJson {
  readonly testResults: readonly {
    readonly name: string;
    readonly startTime: number;
    readonly endTime: number;
  }[];
}

const input = process.argv[2];
if (!input) {
  console.error('usage: npm run test:durations -- <jest --json output file>');
  process.exit(2);
}
const ROOT = path.resolve(__dirname, '..');
const run = JSON.parse(readFileSync(input, 'utf8')) as JestJson;
const longest = new Map<string, number>();
for (const t of run.testResults) {
  const file = path.relative(ROOT, t.name).split(path.sep).join('/');
  longest.set(file, Math.max(longest.get(file) ?? 0, Math.round((t.endTime - t.startTime) / 100) / 10));
}
const durations = Object.fromEntries([...longest].sort(([a], [b]) => a.localeCompare(b)));
const out = path.join(ROOT, 'test', 'runner', 'durations.json');
writeFileSync(out, `${JSON.stringify(durations, null, 2)}\n`);
console.log(`${path.relative(ROOT, out)}: ${Object.keys(durations).length} files`);
