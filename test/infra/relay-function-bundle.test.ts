/**
 * The one place a real RelayFunction bundle is built in the tests (asset bundling through
 * lib/constructs/build-relay-bundle.ts, in a child process): what `cdk deploy` would upload
 * for the job worker (the largest function) must be byte for byte what `npm run stack` rebuilds to
 * read stack traces back. And every function's bundle, built with the same options, within its
 * budget (issue 32, lib/constructs/relay-bundling.ts): 350 KiB with AWS SDK clients, 50 KiB without;
 * the functions still over it held to their recorded ceilings (OVER_BUDGET_CEILING_BYTES).
 */
import { mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import * as path from 'node:path';
import { App, Stack } from 'aws-cdk-lib';
import { build } from 'esbuild';
import { RelayFunction, REPO_ROOT } from '../../lib/constructs/relay-function';
import {
  OVER_BUDGET_CEILING_BYTES,
  RELAY_BUNDLE_BUDGET,
  relayBundleBytes,
  relayBundleOptions,
} from '../../lib/constructs/relay-bundling';
import { HANDLER_ENTRIES, JOB_WORKER_ENTRY } from '../../lib/routes';
import { bundleWithMap } from '../../scripts/stack';

/** The size a function's bundle may have: its recorded ceiling while it is over budget, else the budget. */
const allowedBytes = (entry: string, usesAwsSdk: boolean): number =>
  OVER_BUDGET_CEILING_BYTES[entry] ?? (usesAwsSdk ? RELAY_BUNDLE_BUDGET.sdkBytes : RELAY_BUNDLE_BUDGET.noSdkBytes);

describe('RelayFunction bundle (real esbuild at synth)', () => {
  it('is what the stack reader rebuilds, byte for byte, and within what the worker may weigh', async () => {
    const outdir = mkdtempSync(path.join(tmpdir(), 'relay-synth-'));
    try {
      const app = new App({ outdir });
      new RelayFunction(new Stack(app, 'BundleCheck'), 'Worker', { entry: JOB_WORKER_ENTRY });
      app.synth();
      const assets = readdirSync(outdir).filter((d) => d.startsWith('asset.'));
      expect(assets).toHaveLength(1);
      const deployed = readFileSync(path.join(outdir, assets[0], 'index.mjs'));
      const { code, chunks } = await bundleWithMap(JOB_WORKER_ENTRY);
      expect(deployed.toString('utf8') === code).toBe(true);
      // Its chunks too, by name and content.
      const deployedChunks = readdirSync(path.join(outdir, assets[0])).filter((f) => f !== 'index.mjs');
      expect(deployedChunks.sort()).toEqual(Object.keys(chunks).sort());
      for (const name of deployedChunks) {
        expect(readFileSync(path.join(outdir, assets[0], name), 'utf8') === chunks[name]).toBe(true);
      }
      expect(deployed.length).toBeLessThanOrEqual(allowedBytes(JOB_WORKER_ENTRY, true));
      // No kept names: esbuild's keepNames helper (defineProperty of "name", configurable) is absent.
      expect(deployed.toString('utf8')).not.toMatch(/"name",\{value:\w+,configurable:!0\}/);
    } finally {
      rmSync(outdir, { recursive: true, force: true });
    }
  }, 120_000);
});

describe('RelayFunction bundling failure', () => {
  it('fails the synth naming the entry when esbuild cannot build it', () => {
    const outdir = mkdtempSync(path.join(tmpdir(), 'relay-synth-fail-'));
    try {
      const app = new App({ outdir });
      expect(
        () =>
          new RelayFunction(new Stack(app, 'BundleFail'), 'Missing', { entry: 'lambdas/handlers/no-such-handler.ts' }),
      ).toThrow(/bundling lambdas\/handlers\/no-such-handler\.ts failed/);
    } finally {
      rmSync(outdir, { recursive: true, force: true });
    }
  }, 60_000);
});

describe('every function bundle within its budget', () => {
  const entries = HANDLER_ENTRIES;
  const outdir = mkdtempSync(path.join(tmpdir(), 'relay-budget-'));
  afterAll(() => rmSync(outdir, { recursive: true, force: true }));

  it.each(entries)(
    '%s',
    async (entry) => {
      const result = await build({
        ...relayBundleOptions(REPO_ROOT, entry, path.join(outdir, entry.replace(/[\\/]/g, '_'))),
        sourcemap: false,
        metafile: true,
        logLevel: 'silent',
      });
      const usesAwsSdk = Object.keys(result.metafile.inputs).some((p) => p.includes('@aws-sdk/client-'));
      const { startBytes } = relayBundleBytes(result.metafile.outputs);
      expect(startBytes).toBeLessThanOrEqual(allowedBytes(entry, usesAwsSdk));
    },
    60_000,
  );

  it('lists as over budget only functions that are over it (a fixed one leaves the list)', async () => {
    for (const entry of Object.keys(OVER_BUDGET_CEILING_BYTES)) {
      const result = await build({
        ...relayBundleOptions(REPO_ROOT, entry, path.join(outdir, 'over')),
        write: false,
        sourcemap: false,
        metafile: true,
        logLevel: 'silent',
      });
      const { startBytes } = relayBundleBytes(result.metafile.outputs);
      expect({ entry, over: startBytes > RELAY_BUNDLE_BUDGET.sdkBytes }).toEqual({ entry, over: true });
    }
  }, 60_000);
});
