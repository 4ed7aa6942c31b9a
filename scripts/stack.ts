/**
 * Reads a stack trace from a deployed function back to source lines.
 *
 *   npm run stack -- <function> [file]      (the trace on stdin when no file is given)
 *
 * `<function>` is a handler entry (`lambdas/handlers/worker/job-worker.ts`) or any unique part of
 * one (`job-worker`, `api/create-order`). The bundles are minified without kept names and without
 * source maps (BENCHMARKS.md §7), so a CloudWatch stack names `index.mjs:1:<column>`. This rebuilds
 * the same bundle from the same commit (same esbuild, same options: lib/constructs/relay-bundling.ts)
 * with a source map, and appends `→ <source>:<line>:<column>, calling <name>` to every position it finds,
 * also inside a JSON log line (`"stack":"Error: …\n    at …"`) pasted as it is. Check out the
 * deployed commit first: another commit's bundle has other columns.
 */
import { readFileSync } from 'node:fs';
import { SourceMap } from 'node:module';
import * as path from 'node:path';
import { build } from 'esbuild';
import { relayBundleOptions } from '../lib/constructs/relay-bundling';
import { HANDLER_ENTRIES } from '../lib/routes';

const ROOT = path.resolve(__dirname, '..');

export { HANDLER_ENTRIES };

/** The one entry `name` designates, or an error naming the candidates. */
export const resolveEntry = (name: string): string => {
  const matches = HANDLER_ENTRIES.filter((e) => e === name || e.includes(name));
  if (matches.length === 1) return matches[0];
  const exact = matches.find((e) => e === name || path.basename(e, '.ts') === name);
  if (exact) return exact;
  throw new Error(
    matches.length === 0
      ? `no function entry matches "${name}"; entries: ${HANDLER_ENTRIES.join(', ')}`
      : `"${name}" matches several entries: ${matches.join(', ')}`,
  );
};

/**
 * The deployed bundle of `entry` (index.mjs, and `chunks`: its other files by name) and the source
 * map of index.mjs, built in memory.
 */
export const bundleWithMap = async (
  entry: string,
): Promise<{ code: string; chunks: Record<string, string>; map: SourceMap }> => {
  const outdir = path.join(ROOT, 'cdk.out', 'stack');
  // Twice: chunk file names hash their source maps too, so the deployed code (no maps) names other
  // chunks than a build with maps. The names have the same length, so the map's positions hold.
  const [plain, mapped] = await Promise.all([
    build({ ...relayBundleOptions(ROOT, entry, outdir), write: false, logLevel: 'silent' }),
    // External: no trailing sourceMappingURL comment.
    build({ ...relayBundleOptions(ROOT, entry, outdir), sourcemap: 'external', write: false, logLevel: 'silent' }),
  ]);
  // index.mjs only: a position in a lazy chunk (CheckOrder's ssh2, a library) is left as it is.
  const code = plain.outputFiles.find((f) => path.basename(f.path) === 'index.mjs');
  const mappedCode = mapped.outputFiles.find((f) => path.basename(f.path) === 'index.mjs');
  const map = mapped.outputFiles.find((f) => path.basename(f.path) === 'index.mjs.map');
  if (code && mappedCode && code.text.length !== mappedCode.text.length) {
    throw new Error(`the bundle of ${entry} with a source map differs in length from the deployed one`);
  }
  if (!code || !map) throw new Error(`esbuild produced no bundle and map for ${entry}`);
  const chunks = Object.fromEntries(
    plain.outputFiles.filter((f) => f !== code).map((f) => [path.basename(f.path), f.text] as const),
  );
  return { code: code.text, chunks, map: new SourceMap(JSON.parse(map.text)) };
};

/** A bundle position as `file.mjs:<line>:<column>` (1-based, as V8 prints them). */
const POSITION = /([\w.-]+\.mjs):(\d+):(\d+)/g;

/** `trace` with the source position appended to every bundle position in it. */
export const annotateTrace = (trace: string, map: SourceMap): string =>
  trace.replace(POSITION, (whole, _file: string, line: string, column: string) => {
    // The mapping segment at or before the position, on the same generated line (0-based in and out).
    const entry = map.findEntry(Number(line) - 1, Number(column) - 1) as {
      generatedLine?: number;
      originalSource?: string;
      originalLine?: number;
      originalColumn?: number;
      name?: string;
    };
    if (entry.generatedLine !== Number(line) - 1 || !entry.originalSource) return whole;
    const source = path.relative(ROOT, path.resolve(ROOT, 'cdk.out', 'stack', entry.originalSource));
    return `${whole} → ${source}:${(entry.originalLine ?? 0) + 1}:${(entry.originalColumn ?? 0) + 1}${entry.name ? `, calling ${entry.name}` : ''}`;
  });

const main = async (): Promise<void> => {
  const [name, file] = process.argv.slice(2);
  if (!name) {
    process.stderr.write('usage: npm run stack -- <function> [file]   (trace on stdin without a file)\n');
    process.exitCode = 2;
    return;
  }
  const entry = resolveEntry(name);
  const trace = readFileSync(file ?? 0, 'utf8');
  const { map } = await bundleWithMap(entry);
  process.stdout.write(`${annotateTrace(trace, map)}${trace.endsWith('\n') ? '' : '\n'}`);
};

if (require.main === module) {
  main().catch((error: unknown) => {
    process.stderr.write(`${error instanceof Error ? error.message : String(error)}\n`);
    process.exitCode = 1;
  });
}
