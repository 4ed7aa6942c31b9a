/**
 * The test order (test/runner/sequencer.js): longest first from the committed durations when jest has
 * no cache of its own (a clean clone), so no slow file starts last.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { availableParallelism, tmpdir } from 'node:os';
import * as path from 'node:path';

// eslint-disable-next-line @typescript-eslint/no-require-imports
const LongestFirst = require('../../runner/sequencer.js') as new () => {
  sort(tests: FakeTest[]): FakeTest[];
};
// eslint-disable-next-line @typescript-eslint/no-require-imports
const committed = require('../../runner/durations.json') as Record<string, number>;

interface FakeTest {
  readonly path: string;
  readonly context: unknown;
  duration?: number;
}

const ROOT = path.resolve(__dirname, '..', '..', '..');

describe('test order', () => {
  const cacheDirectory = mkdtempSync(path.join(tmpdir(), 'jest-cache-'));
  afterAll(() => rmSync(cacheDirectory, { recursive: true, force: true }));
  const testOf = (file: string, bytes = 1_000): FakeTest => ({
    path: path.join(ROOT, file),
    context: { config: { cacheDirectory, name: 'unit', rootDir: ROOT }, hasteFS: { getSize: () => bytes } },
  });

  it('runs the longest committed files first, a file without a duration before them, whatever their sizes', () => {
    const files = Object.entries(committed).sort(([, a], [, b]) => b - a);
    const [longest] = files[0]!;
    const [shortest] = files[files.length - 1]!;
    const [middle] = files[Math.floor(files.length / 2)]!;
    const order = new LongestFirst()
      .sort([testOf(shortest, 90_000), testOf(middle, 50_000), testOf('test/unit/new.test.ts', 10), testOf(longest, 1)])
      .map((t) => path.relative(ROOT, t.path));
    expect(order).toEqual(['test/unit/new.test.ts', longest, middle, shortest]);
  });

  it('has a duration for every test file but a few new ones (npm run test:durations refreshes it)', () => {
    const known = Object.keys(committed).filter((file) => file.endsWith('.test.ts'));
    expect(known.length).toBeGreaterThan(150);
    expect(Object.values(committed).every((s) => typeof s === 'number' && s >= 0)).toBe(true);
  });

  it('runs three workers per core, as a number (Jest reads a percentage over 100 as that many workers)', () => {
    // eslint-disable-next-line @typescript-eslint/no-require-imports
    const config = require('../../../jest.config.js') as { maxWorkers: unknown };
    expect(config.maxWorkers).toBe(3 * availableParallelism());
  });
});
