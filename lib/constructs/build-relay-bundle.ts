/**
 * Builds one relay function's bundle as `<outdir>/index.mjs` (and its lazy chunks) with the relay's
 * esbuild options and plugins (relay-bundling.ts). RelayFunction's asset bundling runs it in a child process
 * (`node --import tsx`): asset bundling is synchronous, and esbuild runs plugins only through its
 * asynchronous API.
 *
 * Usage: node --import tsx lib/constructs/build-relay-bundle.ts <repo-relative entry> <outdir>
 */
import * as path from 'node:path';
import { build } from 'esbuild';
import { relayBundleOptions } from './relay-bundling';

const repoRoot = path.resolve(__dirname, '..', '..');
const [entry, outdir] = process.argv.slice(2);
if (!entry || !outdir) {
  process.stderr.write('usage: build-relay-bundle.ts <entry> <outdir>\n');
  process.exit(2);
}
build({ ...relayBundleOptions(repoRoot, entry, outdir), logLevel: 'warning' }).catch(() => {
  // esbuild has printed the errors (logLevel).
  process.exitCode = 1;
});
