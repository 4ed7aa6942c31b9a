/** BENCHMARKS.md's "Last run" tables are what bench/results.json says (issue 32, item 2). */
import { readFileSync } from 'node:fs';
import { BENCHMARKS_FILE, RESULTS_FILE, benchTables, withBenchTables } from '../../../bench/doc';

const results = () => JSON.parse(readFileSync(RESULTS_FILE, 'utf8')) as Record<string, unknown>;

describe("BENCHMARKS.md's last-run tables", () => {
  it('are what bench/results.json generates now (else: npm run bench:doc, and commit both files)', () => {
    const committed = readFileSync(BENCHMARKS_FILE, 'utf8');
    expect(withBenchTables(committed, results())).toBe(committed);
  });

  it('notice a drift: another figure in the results no longer matches the document', () => {
    const committed = readFileSync(BENCHMARKS_FILE, 'utf8');
    const r = results();
    const changed = { ...r, acceptPath: { ...(r.acceptPath as object), p99Us: 4321 } };
    expect(withBenchTables(committed, changed)).not.toBe(committed);
  });

  it("show every function with its kind, size, its kind's budget, load against the reference, first call, lazy chunks and whether it is within budgets", () => {
    const bundle = (entry: string, kind: string, bytes: number, loadRatio: number, withinBudget: boolean) => ({
      entry,
      kind,
      bytes,
      usesAwsSdk: true,
      loadMsMedian: 40 * loadRatio,
      loadCpuMsMedian: 30 * loadRatio,
      loadRatio,
      firstInvocationMsMedian: 50,
      firstInvocationOutcome: 'HTTP 202',
      lazyChunksCpuMsMedian: 4,
      budgetBytes: (kind === 'api' ? 330 : 360) * 1024,
      budgetLoadRatio: kind === 'api' ? 1.8 : 2.2,
      withinBudget,
      topModules: [{ module: '@smithy/core', bytes: 95_000 }],
    });
    const text = benchTables({
      bundles: {
        tracing: true,
        reference: { bytes: 201_000, loadMsMedian: 40, loadCpuMsMedian: 30, firstInvocationMsMedian: 30 },
        budgets: {
          api: { bytes: 330 * 1024, loadRatio: 1.8 },
          'worker-watch-slack': { bytes: 360 * 1024, loadRatio: 2.2 },
          static: { bytes: 50 * 1024 },
        },
        bundles: [
          { ...bundle('lambdas/handlers/api/create-order.ts', 'api', 330_000, 1.2, true), lazyBytes: 2048 },
          bundle('lambdas/handlers/worker/job-worker.ts', 'worker-watch-slack', 427_000, 1.6, false),
        ],
      },
    } as never);
    expect(text).toContain('api ≤ 330.0 KB, load ≤ 1.8×; worker-watch-slack ≤ 360.0 KB, load ≤ 2.2×; static ≤ 50.0 KB');
    expect(text).toContain(
      '| api/create-order | api | 322.3 KB (+ 2.0 KB lazy) | 330.0 KB, 1.8× | 36.0 / 48.0 ms | 1.20 | 50.0 ms | 4.0 ms | yes |',
    );
    expect(text).toContain(
      '| worker/job-worker | worker-watch-slack | 417.0 KB | 360.0 KB, 2.2× | 48.0 / 64.0 ms | 1.60 | 50.0 ms | - | **no** |',
    );
    expect(text).toContain('196.3 KB, load 30.0 / 40.0 ms');
    expect(text).toContain('Over a budget: worker/job-worker.');
  });

  it('say a section was not run rather than leave an old table', () => {
    expect(benchTables({})).toContain('Not in bench/results.json');
  });
});
