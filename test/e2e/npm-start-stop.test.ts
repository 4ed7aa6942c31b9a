/**
 * `npm start` stops everything on SIGTERM (issue 28): npm runs the script, tsx runs local/start.ts in a
 * child node process; a SIGTERM to the `npm start` process must reach that child, which closes the
 * relay's port and removes its card (.relay/local-<port>.json). Real processes, real port: the test
 * asserts the properties (process gone, port closed, card gone), not how long they take.
 */
import { spawn } from 'node:child_process';
import type { ChildProcess } from 'node:child_process';
import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { connect } from 'node:net';
import * as path from 'node:path';
import { localRelayFile } from '../../contract/local-relay-file';
import { waitUntil } from '../helpers/until';

const ROOT = path.resolve(__dirname, '../..');

const portAccepts = (port: number): Promise<boolean> =>
  new Promise((resolve) => {
    const socket = connect({ host: '127.0.0.1', port });
    socket.once('connect', () => {
      socket.destroy();
      resolve(true);
    });
    socket.once('error', () => resolve(false));
  });

describe('npm start and SIGTERM', () => {
  let child: ChildProcess | undefined;

  // Its own state folder: the repository's .relay/state may belong to a developer's npm start.
  const stateDir = mkdtempSync(path.join(tmpdir(), 'relay-state-'));
  afterAll(() => rmSync(stateDir, { recursive: true, force: true }));

  afterEach(() => {
    // Only if the test failed half-way: the process group npm start leads.
    if (child?.pid && child.exitCode === null) process.kill(-child.pid, 'SIGKILL');
  });

  it('stops tsx and its node child: the port closes and the card is removed', async () => {
    // Prepare: npm start on a free port, in its own process group (so a failure can clean up all of it).
    const started = spawn('npm', ['start'], {
      cwd: ROOT,
      env: {
        ...process.env,
        PORT: '0',
        STATE_DIR: stateDir,
        GPU_RELAY_SKIP_INSTALL_CHECK: '1',
        POWERTOOLS_LOG_LEVEL: 'ERROR',
      },
      stdio: ['ignore', 'pipe', 'pipe'],
      detached: true,
    });
    child = started;
    let stdout = '';
    started.stdout?.on('data', (chunk: Buffer) => (stdout += chunk.toString('utf8')));
    started.stderr?.resume();
    const exited = new Promise<number | null>((resolve) => started.once('close', (code) => resolve(code)));
    await waitUntil(() => /API\s+http:\/\/127\.0\.0\.1:\d+/.test(stdout), 'the banner', 90_000);
    const port = Number(/API\s+http:\/\/127\.0\.0\.1:(\d+)/.exec(stdout)?.[1]);
    const card = path.join(ROOT, localRelayFile(port));
    expect(existsSync(card)).toBe(true);
    expect(await portAccepts(port)).toBe(true);

    // Act: SIGTERM to the npm start process alone, as `kill <pid>` sends it.
    started.kill('SIGTERM');

    // Assess
    expect(await exited).toBe(0);
    await waitUntil(async () => !(await portAccepts(port)), `port ${port} to close`, 30_000);
    expect(existsSync(card)).toBe(false);
    expect(stdout).toContain('SIGTERM: stopping');
  }, 120_000);
});
