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
import { relayBuildOptions } from '../lib/constructs/relay-bundling';
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

/** The deployed bundle of `entry` and its source map, built in memory. */
export const bundleWithMap = async (entry: string): Promise<{ code: string; map: SourceMap }> => {
  const result = await build({
    ...relayBuildOptions(ROOT),
    entryPoints: [path.join(ROOT, entry)],
    outfile: path.join(ROOT, 'cdk.out', 'stack', 'index.mjs'),
    // External: the code is the deployed code byte for byte (no trailing sourceMappingURL comment).
    sourcemap: 'external',
    write: false,
    logLevel: 'silent',
  });
  const code = result.outputFiles.find((f) => f.path.endsWith('.mjs'));
  const map = result.outputFiles.find((f) => f.path.endsWith('.map'));
  if (!code || !map) throw new Error(`esbuild produced no bundle and map for ${entry}`);
  return { code: code.text, map: new SourceMap(JSON.parse(map.text)) };
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
