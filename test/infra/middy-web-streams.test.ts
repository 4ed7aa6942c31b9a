/**
 * @middy/core's `node:stream/web` import is replaced at bundling (relay-bundling.ts,
 * middyWebStreamsOnUse): loading a bundle no longer loads Node's web streams, and middy's response
 * streaming still tells a web ReadableStream from anything else.
 */
import { execFile } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import * as path from 'node:path';
import { promisify } from 'node:util';
import { build } from 'esbuild';
import { REPO_ROOT } from '../../lib/constructs/relay-function';
import { relayBuildOptions } from '../../lib/constructs/relay-bundling';

const PROBE = path.join(REPO_ROOT, 'test', 'infra', 'fixtures', 'middy-stream-probe.ts');

/**
 * Imports the bundle as Lambda would (with Lambda's `awslambda` streaming global, faked to collect
 * what is written), then streams one response per body kind. Prints whether the import loaded
 * stream/web, and each response.
 */
const CHILD = `
const { Writable } = await import('node:stream');
globalThis.awslambda = { streamifyResponse: (fn) => fn, HttpResponseStream: { from: (stream) => stream } };
const before = new Set(process.moduleLoadList);
const { handler } = await import(process.env.PROBE_BUNDLE);
const loadedWebStreams = process.moduleLoadList.some((m) => !before.has(m) && m.includes('stream/web'));
const responses = {};
for (const body of ['web-stream', 'string', 'object']) {
  const chunks = [];
  const sink = new Writable({ write(chunk, _encoding, done) { chunks.push(String(chunk)); done(); } });
  try {
    await handler({ body }, sink, {});
    responses[body] = chunks.join('');
  } catch (error) {
    responses[body] = 'threw: ' + error.message;
  }
}
console.log(JSON.stringify({ loadedWebStreams, responses }));
`;

describe('@middy/core without node:stream/web at load', () => {
  const outdir = mkdtempSync(path.join(tmpdir(), 'relay-middy-streams-'));
  afterAll(() => rmSync(outdir, { recursive: true, force: true }));

  const run = async (withPlugins: boolean) => {
    const options = relayBuildOptions(REPO_ROOT);
    const outfile = path.join(outdir, withPlugins ? 'relay.mjs' : 'plain.mjs');
    await build({
      ...options,
      plugins: withPlugins ? options.plugins : [],
      entryPoints: [PROBE],
      outfile,
      logLevel: 'silent',
    });
    const { stdout } = await promisify(execFile)(process.execPath, ['--input-type=module', '-e', CHILD], {
      env: { PATH: process.env.PATH, PROBE_BUNDLE: outfile },
    });
    return JSON.parse(stdout) as { loadedWebStreams: boolean; responses: Record<string, string> };
  };

  it('loads no web streams, and streams responses as middy without the change does', async () => {
    const [relay, plain] = await Promise.all([run(true), run(false)]);
    expect(plain.loadedWebStreams).toBe(true); // what the change takes away
    expect(relay.loadedWebStreams).toBe(false);
    expect(relay.responses).toEqual({
      'web-stream': 'streamed',
      string: 'a string',
      object: 'threw: handler response not a ReadableStream',
    });
    expect(relay.responses).toEqual(plain.responses);
  }, 60_000);
});
