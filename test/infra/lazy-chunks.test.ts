/**
 * Code splitting of the bundles (relayBundleOptions): a module a function imports with `import()`
 * is left out of the `index.mjs` every cold start loads and put in a chunk beside it. CheckOrder's
 * ssh2 (READINESS_PROBE=ssh-login only); the bundled login probe still loads it from the chunk and
 * works (a non-SSH server reads as `not_ssh`). And the job worker's and the fleet watch's rarely used
 * adapters (issue 40 §1, lazyPort): a static import that put one back in the start would fail here.
 */
import { execFile } from 'node:child_process';
import { mkdtempSync, readdirSync, rmSync } from 'node:fs';
import { createServer, type Server, type Socket } from 'node:net';
import { tmpdir } from 'node:os';
import * as path from 'node:path';
import { promisify } from 'node:util';
import { build, type Metafile } from 'esbuild';
import { REPO_ROOT } from '../../lib/constructs/relay-function';
import { relayBundleBudget, relayBundleBytes, relayBundleOptions } from '../../lib/constructs/relay-bundling';
import { FLEET_WATCH_ENTRY, JOB_WORKER_ENTRY, WORKFLOW_TASKS } from '../../lib/routes';

const CHECK_ORDER_ENTRY = WORKFLOW_TASKS.CheckOrder;

/** The packages an output file carries, by esbuild's inputs of it. */
const packagesIn = (output: Metafile['outputs'][string]): Set<string> =>
  new Set(
    Object.keys(output.inputs)
      .map((input) => /node_modules\/((?:@[^/]+\/)?[^/]+)/.exec(input)?.[1])
      .filter((name): name is string => name !== undefined),
  );

describe('lazy chunks', () => {
  const outdir = mkdtempSync(path.join(tmpdir(), 'relay-lazy-'));
  let server: Server;
  const sockets = new Set<Socket>();
  beforeAll(async () => {
    // Answers like a web server, not an SSH server.
    server = createServer((socket) => {
      sockets.add(socket);
      socket.end('HTTP/1.1 400 Bad Request\r\n\r\n');
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  });
  afterAll(async () => {
    for (const socket of sockets) socket.destroy();
    await new Promise((resolve) => server.close(resolve));
    rmSync(outdir, { recursive: true, force: true });
  });

  it("keep CheckOrder's ssh2 out of the module its cold start loads, which fits the budget", async () => {
    const result = await build({
      ...relayBundleOptions(REPO_ROOT, CHECK_ORDER_ENTRY, path.join(outdir, 'check-order')),
      write: false,
      metafile: true,
      logLevel: 'silent',
    });
    const outputs = Object.entries(result.metafile.outputs);
    const start = outputs.find(([file]) => path.basename(file) === 'index.mjs');
    const ssh2Chunks = outputs.filter(([, output]) => packagesIn(output).has('ssh2'));
    expect(start).toBeDefined();
    expect(ssh2Chunks).toHaveLength(1);
    // Not the start module, nor a chunk the start module imports statically.
    expect(ssh2Chunks[0][0]).not.toBe(start![0]);
    expect(start![1].imports.filter((i) => i.kind === 'import-statement').map((i) => i.path)).not.toContain(
      ssh2Chunks[0][0],
    );
    const { startBytes, lazyBytes } = relayBundleBytes(result.metafile.outputs);
    expect(startBytes).toBeLessThanOrEqual(relayBundleBudget(CHECK_ORDER_ENTRY).bytes);
    expect(lazyBytes).toBeGreaterThan(200 * 1024);
  }, 60_000);

  /** The inputs (packages, or our files) of what a cold start loads, and of the lazy chunks. */
  const startAndLazyInputs = async (entry: string): Promise<{ start: Set<string>; lazy: Set<string> }> => {
    const result = await build({
      ...relayBundleOptions(REPO_ROOT, entry, path.join(outdir, path.basename(entry, '.ts'))),
      write: false,
      metafile: true,
      logLevel: 'silent',
    });
    const { lazyFiles } = relayBundleBytes(result.metafile.outputs);
    const start = new Set<string>();
    const lazy = new Set<string>();
    for (const [file, output] of Object.entries(result.metafile.outputs)) {
      const into = lazyFiles.includes(file) ? lazy : start;
      for (const input of Object.keys(output.inputs)) {
        into.add(/node_modules\/((?:@[^/]+\/)?[^/]+)/.exec(input)?.[1] ?? input);
      }
    }
    return { start, lazy };
  };

  it.each([
    [
      JOB_WORKER_ENTRY,
      [
        '@aws-sdk/client-sfn',
        '@aws-sdk/client-sqs',
        'lambdas/adapters/dynamodb/dynamodb-waiting-entries.ts',
        'lambdas/adapters/dynamodb/dynamodb-spend-store.ts',
      ],
    ],
    [
      FLEET_WATCH_ENTRY,
      [
        '@aws-sdk/client-sfn',
        'standardwebhooks',
        'lambdas/adapters/http-notifier.ts',
        'lambdas/adapters/dynamodb/dynamodb-spend-store.ts',
        'lambdas/adapters/dynamodb/dynamodb-host-records.ts',
        'lambdas/adapters/dynamodb/dynamodb-caller-keys.ts',
        'lambdas/domain/recovery/outbid-replacement.ts',
      ],
    ],
  ])(
    "keep %s's rarely used adapters in lazy chunks",
    async (entry, rare) => {
      const { start, lazy } = await startAndLazyInputs(entry);
      for (const module of rare)
        expect({ module, start: start.has(module), lazy: lazy.has(module) }).toEqual({
          module,
          start: false,
          lazy: true,
        });
    },
    60_000,
  );

  it('load the chunk when the code that imports it runs: a bundled login probe reads a web server as not_ssh', async () => {
    const dir = path.join(outdir, 'probe');
    await build({
      ...relayBundleOptions(REPO_ROOT, 'test/infra/fixtures/ssh-login-probe-run.ts', dir),
      logLevel: 'silent',
    });
    expect(readdirSync(dir).filter((f) => f.startsWith('chunk-')).length).toBeGreaterThan(0);
    const address = server.address();
    const port = typeof address === 'object' && address ? address.port : 0;
    const { stdout } = await promisify(execFile)(process.execPath, [path.join(dir, 'index.mjs')], {
      env: { PATH: process.env.PATH, PROBE_PORT: String(port) },
      encoding: 'utf8',
    });
    expect(JSON.parse(stdout)).toMatchObject({ answered: false, reason: 'not_ssh' });
  }, 60_000);
});
