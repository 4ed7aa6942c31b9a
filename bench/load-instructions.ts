/**
 * Instructions of a function's module load, counted by valgrind (callgrind), for before/after
 * comparisons of one change: on the shared 2-core machine a load's CPU time moves by ±20–30 % between
 * runs, its instruction count by a few per cent. Not part of `npm run bench` (valgrind is slow: ~10 s
 * per process); `npx tsx bench/load-instructions.ts [entry substrings…]` (default: the API functions; a path ending in .ts is built as an entry of its own).
 *
 * Each function is built as deployed (relayBundleOptions) and imported in a fresh process run as the
 * bundle bench's child runs (Lambda's builtins loaded first, Lambda-like environment); the figure is
 * that process's instructions (every thread) minus those of a process importing an empty module,
 * median of BENCH_INSTR_RUNS (default 3). The reference (bench/reference-handler.ts) is counted the
 * same way, and each function's ratio to it printed beside.
 */
import { execFile } from 'node:child_process';
import { mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { promisify } from 'node:util';
import { build } from 'esbuild';
import { relayBundleBytes, relayBundleOptions, relayFunctionKind } from '../lib/constructs/relay-bundling';
import { HANDLER_ENTRIES } from '../lib/routes';
import { LAMBDA_RUNTIME_BUILTINS, lambdaEnv } from './bundles';

const ROOT = path.resolve(__dirname, '..');
const OUT = process.env.BENCH_INSTR_OUT ?? path.join(ROOT, 'bench', 'out', 'instructions');
const RUNS = Number(process.env.BENCH_INSTR_RUNS ?? 3);
const REFERENCE_ENTRY = 'bench/reference-handler.ts';
const run = promisify(execFile);

const CHILD = `
await Promise.all(${JSON.stringify(LAMBDA_RUNTIME_BUILTINS)}.map((name) => import('node:' + name)));
await import(process.env.BENCH_BUNDLE);
process.exit(0);
`;

/** The environment the bundle bench's child has at load (no endpoints: nothing is called). */
const ENV: NodeJS.ProcessEnv = {
  ...lambdaEnv(OUT, '127.0.0.1:2000'),
  POWERTOOLS_LOG_LEVEL: 'SILENT',
  POWERTOOLS_METRICS_DISABLED: 'true',
};

/** Instructions of one process importing `file` (callgrind's total over all threads). */
const instructions = async (file: string): Promise<number> => {
  const out = path.join(os.tmpdir(), `relay-callgrind-${process.pid}-${Date.now()}.out`);
  try {
    await run(
      'valgrind',
      [
        '--tool=callgrind',
        `--callgrind-out-file=${out}`,
        process.execPath,
        ...(process.env.BENCH_INSTR_NODE_FLAGS?.split(' ').filter(Boolean) ?? []),
        '--input-type=module',
        '-e',
        CHILD,
      ],
      { env: { ...ENV, BENCH_BUNDLE: file }, maxBuffer: 64 * 1024 * 1024 },
    );
    const summary = /^(?:summary|totals): (\d+)/m.exec(readFileSync(out, 'utf8'));
    if (!summary) throw new Error(`no totals in ${out}`);
    return Number(summary[1]);
  } finally {
    rmSync(out, { force: true });
  }
};

const median = (xs: number[]): number => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];

const medianInstructions = async (file: string): Promise<number[]> => {
  const counts: number[] = [];
  for (let i = 0; i < RUNS; i += 1) counts.push(await instructions(file));
  return counts;
};

const main = async (): Promise<void> => {
  const only = process.argv.slice(2);
  // A path ending in .ts is built as given (an experiment's entry); anything else picks handler entries.
  const files = only.filter((o) => o.endsWith('.ts'));
  const names = only.filter((o) => !o.endsWith('.ts'));
  const entries = [
    ...files,
    ...HANDLER_ENTRIES.filter((e) =>
      names.length ? names.some((o) => e.includes(o)) : !files.length && relayFunctionKind(e) === 'api',
    ),
  ];
  mkdirSync(OUT, { recursive: true });
  const empty = path.join(OUT, 'empty.mjs');
  writeFileSync(empty, 'export const handler = () => undefined;\n');
  const outdirOf = (entry: string) => path.join(OUT, entry.replace(/[\\/]/g, '_').replace(/\.ts$/, ''));
  const built = await Promise.all(
    [REFERENCE_ENTRY, ...entries].map(async (entry) => {
      const result = await build({
        ...relayBundleOptions(ROOT, entry, outdirOf(entry)),
        sourcemap: false,
        metafile: true,
        logLevel: 'silent',
      });
      return { entry, bytes: relayBundleBytes(result.metafile.outputs).startBytes };
    }),
  );
  const base = median(await medianInstructions(empty));
  const line = (entry: string, bytes: number, counts: number[], ratio?: number) =>
    console.log(
      [
        entry.padEnd(44),
        `${(bytes / 1024).toFixed(1)} KB`.padStart(10),
        `${((median(counts) - base) / 1e6).toFixed(1)} M`.padStart(9),
        ratio === undefined ? '' : `${ratio.toFixed(2)}×`,
        `(${counts.map((c) => ((c - base) / 1e6).toFixed(1)).join(', ')})`,
      ].join('  '),
    );
  console.log(`empty module: ${(base / 1e6).toFixed(1)} M instructions (subtracted below)`);
  const [reference, ...functions] = built;
  const refCounts = await medianInstructions(path.join(outdirOf(reference.entry), 'index.mjs'));
  const ref = median(refCounts) - base;
  line(reference.entry, reference.bytes, refCounts);
  for (const f of functions) {
    const counts = await medianInstructions(path.join(outdirOf(f.entry), 'index.mjs'));
    line(f.entry, f.bytes, counts, (median(counts) - base) / ref);
  }
};

main().catch((error: unknown) => {
  console.error(error);
  process.exitCode = 1;
});
