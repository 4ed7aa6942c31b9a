/**
 * Bench 1: bundle size (esbuild metafile, minified, the same options as RelayFunction) and module
 * load time of each bundle in a fresh Node process, beside an empty-handler baseline.
 */
import { execFileSync } from 'node:child_process';
import { mkdirSync, writeFileSync } from 'node:fs';
import * as path from 'node:path';
import { build } from 'esbuild';
import { EXECUTION_ENDED_ENTRY, JOB_WORKER_ENTRY, ROUTES, WORKFLOW_TASKS } from '../lib/routes';

const ROOT = path.resolve(__dirname, '..');
const OUT = path.join(ROOT, 'bench', 'out', 'bundles');
const LOAD_RUNS = 7;

export interface BundleFigure {
  readonly entry: string;
  readonly bytes: number;
  readonly usesAwsSdk: boolean;
  readonly loadMsMedian: number;
  readonly budgetBytes: number;
  readonly withinBudget: boolean;
}

const median = (xs: number[]): number => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];

/** Load time of one ESM file in a fresh process: the child measures its own dynamic import. */
const loadTimeMs = (file: string): number => {
  const runs: number[] = [];
  for (let i = 0; i < LOAD_RUNS; i += 1) {
    const out = execFileSync(process.execPath, ['--input-type=module', '-e',
      `const t=performance.now();await import(${JSON.stringify(file)});console.log(performance.now()-t)`], {
      env: { ...process.env, AWS_REGION: 'us-east-1', POWERTOOLS_LOG_LEVEL: 'SILENT' },
    });
    runs.push(Number(out.toString().trim()));
  }
  return median(runs);
};

const bundle = async (entry: string, outfile: string): Promise<{ bytes: number; usesAwsSdk: boolean }> => {
  const result = await build({
    entryPoints: [path.join(ROOT, entry)],
    outfile,
    bundle: true,
    minify: true,
    keepNames: true,
    sourcemap: false,
    platform: 'node',
    target: 'node20',
    format: 'esm',
    mainFields: ['module', 'main'],
    banner: { js: "import { createRequire } from 'module';const require = createRequire(import.meta.url);" },
    metafile: true,
    logLevel: 'silent',
  });
  const output = Object.values(result.metafile.outputs)[0];
  const usesAwsSdk = Object.keys(result.metafile.inputs).some((p) => p.includes('@aws-sdk/client-'));
  return { bytes: output.bytes, usesAwsSdk };
};

export const benchBundles = async (): Promise<{ baselineLoadMs: number; bundles: BundleFigure[] }> => {
  mkdirSync(OUT, { recursive: true });
  const baselineFile = path.join(OUT, 'baseline.mjs');
  writeFileSync(baselineFile, 'export const handler = async () => ({ statusCode: 200 });\n');
  const baselineLoadMs = loadTimeMs(baselineFile);
  const entries = [...ROUTES.map((r) => r.entry), ...Object.values(WORKFLOW_TASKS), EXECUTION_ENDED_ENTRY, JOB_WORKER_ENTRY];
  const bundles: BundleFigure[] = [];
  for (const entry of entries) {
    const outfile = path.join(OUT, `${entry.replace(/[\\/]/g, '_').replace(/\.ts$/, '')}.mjs`);
    const { bytes, usesAwsSdk } = await bundle(entry, outfile);
    const budgetBytes = usesAwsSdk ? 400 * 1024 : 60 * 1024;
    bundles.push({ entry, bytes, usesAwsSdk, loadMsMedian: loadTimeMs(outfile), budgetBytes, withinBudget: bytes <= budgetBytes });
  }
  return { baselineLoadMs, bundles };
};
