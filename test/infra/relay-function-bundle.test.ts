/**
 * The one place a real NodejsFunction bundle is built in the tests: what `cdk deploy` would upload
 * for the job worker (the largest function) must be byte for byte what `npm run stack` rebuilds to
 * read stack traces back, and inside its budget (BENCHMARKS.md §7): 420 KiB since this round (Standard
 * Webhooks signing, adaptive pacing, the per-hour price reader, placement intents, caller keys and
 * standing orders took the worker from 398 to 410.0 KiB with the setting texts moved out of the
 * bundles); the next step is splitting the worker by job kind.
 */
import { mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import * as path from 'node:path';
import { App, Stack } from 'aws-cdk-lib';
import { RelayFunction } from '../../lib/constructs/relay-function';
import { JOB_WORKER_ENTRY } from '../../contract/routes';
import { bundleWithMap } from '../../scripts/stack';

describe('RelayFunction bundle (real esbuild through NodejsFunction)', () => {
  it('is what the stack reader rebuilds, byte for byte, and at most 420 KiB', async () => {
    const outdir = mkdtempSync(path.join(tmpdir(), 'relay-synth-'));
    try {
      const app = new App({ outdir });
      new RelayFunction(new Stack(app, 'BundleCheck'), 'Worker', { entry: JOB_WORKER_ENTRY });
      app.synth();
      const assets = readdirSync(outdir).filter((d) => d.startsWith('asset.'));
      expect(assets).toHaveLength(1);
      const deployed = readFileSync(path.join(outdir, assets[0], 'index.mjs'));
      const { code } = await bundleWithMap(JOB_WORKER_ENTRY);
      expect(deployed.toString('utf8') === code).toBe(true);
      expect(deployed.length).toBeLessThanOrEqual(420 * 1024);
      // No kept names: esbuild's keepNames helper (defineProperty of "name", configurable) is absent.
      expect(deployed.toString('utf8')).not.toMatch(/"name",\{value:\w+,configurable:!0\}/);
    } finally {
      rmSync(outdir, { recursive: true, force: true });
    }
  }, 120_000);
});
