/**
 * `npm test` (scripts/test.mjs): jest with the typecheck and the lint run beside it at a lower
 * priority. Driven for real through `npm test` in a scratch package whose `typecheck` and `lint`
 * scripts and `jest` are small Node scripts that record what they were given.
 */
import { spawn } from 'node:child_process';
import { chmodSync, existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import * as path from 'node:path';

const RUNNER = path.resolve(__dirname, '../../../scripts/test.mjs');

interface Outcome {
  readonly code: number | null;
  readonly stdout: string;
  readonly stderr: string;
}

/** Node one-liners the scratch package's scripts run (`node -e`), as JSON strings for package.json. */
const script = (code: string): string => `node -e ${JSON.stringify(code)}`;

describe('npm test (scripts/test.mjs)', () => {
  let dir: string;
  beforeEach(() => {
    dir = mkdtempSync(path.join(tmpdir(), 'npm-test-runner-'));
  });
  afterEach(() => rmSync(dir, { recursive: true, force: true }));

  /** A scratch package: `npm test` runs the runner; `jest` is node_modules/.bin/jest. */
  const scratch = (opts: { typecheck: string; lint: string; jest: string }): void => {
    writeFileSync(
      path.join(dir, 'package.json'),
      JSON.stringify({
        name: 'scratch',
        private: true,
        scripts: { test: `node ${JSON.stringify(RUNNER)}`, typecheck: opts.typecheck, lint: opts.lint },
      }),
    );
    mkdirSync(path.join(dir, 'node_modules', '.bin'), { recursive: true });
    const jest = path.join(dir, 'node_modules', '.bin', 'jest');
    writeFileSync(jest, `#!/usr/bin/env node\n${opts.jest}\n`);
    chmodSync(jest, 0o755);
  };

  const npmTest = (args: string[] = []): Promise<Outcome> =>
    new Promise((resolve, reject) => {
      const child = spawn('npm', ['test', '--silent', ...(args.length ? ['--', ...args] : [])], {
        cwd: dir,
        env: { PATH: process.env.PATH ?? '', HOME: dir, npm_config_update_notifier: 'false' },
      });
      let stdout = '';
      let stderr = '';
      child.stdout.on('data', (c: Buffer) => (stdout += c.toString('utf8')));
      child.stderr.on('data', (c: Buffer) => (stderr += c.toString('utf8')));
      child.on('error', reject);
      child.on('close', (code) => resolve({ code, stdout, stderr }));
    });

  it("runs the checks beside jest, at a lower priority, and passes jest's arguments on", async () => {
    // Prepare: the typecheck leaves a mark and its priority; jest waits for the mark (the checks run
    // while jest does) and records its arguments
    const mark = path.join(dir, 'typecheck-ran');
    scratch({
      typecheck: script(`require('fs').writeFileSync(${JSON.stringify(mark)}, String(require('os').getPriority()))`),
      lint: script('console.log("lint output")'),
      jest: `const fs = require('fs');
const until = Date.now() + 60000;
const wait = () => fs.existsSync(${JSON.stringify(mark)}) ? (fs.writeFileSync('jest-args', JSON.stringify(process.argv.slice(2))), console.log('jest done')) : Date.now() > until ? process.exit(9) : setTimeout(wait, 20);
wait();`,
    });
    // Act
    const run = await npmTest(['test/unit/cli', '--ci']);
    // Assess
    expect(run.code).toBe(0);
    expect(run.stdout).toContain('jest done');
    expect(JSON.parse(readFileSync(path.join(dir, 'jest-args'), 'utf8'))).toEqual(['test/unit/cli', '--ci']);
    expect(Number(readFileSync(mark, 'utf8'))).toBe(10);
    expect(run.stderr).toMatch(/typecheck passed/);
    expect(run.stderr).toMatch(/lint passed/);
    // A passing check's output is not repeated
    expect(run.stdout + run.stderr).not.toContain('lint output');
  }, 60_000);

  it("fails when a check fails, showing that check's output after jest's", async () => {
    // Prepare
    scratch({
      typecheck: script('process.exit(0)'),
      lint: script('console.error("src/a.ts: Missing semicolon"); process.exit(1)'),
      jest: "console.error('JEST SUMMARY')",
    });
    // Act
    const run = await npmTest();
    // Assess
    expect(run.code).toBe(1);
    expect(run.stderr).toMatch(/lint FAILED/);
    expect(run.stderr.indexOf('src/a.ts: Missing semicolon')).toBeGreaterThan(run.stderr.indexOf('JEST SUMMARY'));
    expect(run.stderr).toMatch(/typecheck passed/);
  }, 60_000);

  it("exits with jest's code when jest fails, and still waits for the checks", async () => {
    // Prepare: a slow typecheck that leaves a mark when it ends
    const mark = path.join(dir, 'typecheck-ended');
    scratch({
      typecheck: script(`setTimeout(() => require('fs').writeFileSync(${JSON.stringify(mark)}, 'x'), 300)`),
      lint: script('process.exit(0)'),
      jest: 'process.exit(3)',
    });
    // Act
    const run = await npmTest();
    // Assess
    expect(run.code).toBe(3);
    expect(existsSync(mark)).toBe(true);
    expect(run.stderr).toMatch(/typecheck passed/);
  }, 60_000);
});
