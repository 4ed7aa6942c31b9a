/**
 * The README's first GPU (issue 22 item 2): right after `npm start`, with nothing set,
 * `npx gpu-relay create-order --gpu "RTX 4090" --max-price 0.5 --wait` rents a GPU. The runtime starts
 * as `npm start` starts it (no WEBHOOK_SECRET, no CALLBACK_SIGNING_SECRET: the placeholder and a
 * generated key) and publishes its card; the CLI runs from that folder with an empty environment.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import * as path from 'node:path';
import { publishLocalRelay } from '../../local/local-relay-file';
import type { PublishedCard } from '../../local/local-relay-file';
import { startLocalRuntime } from '../../local/runtime';
import type { LocalRuntime } from '../../local/runtime';
import { runCli, stdoutJson } from '../unit/cli/run-cli';

describe('CLI: the quick path after npm start', () => {
  let runtime: LocalRuntime;
  let card: PublishedCard;
  let dir: string;

  beforeAll(async () => {
    dir = mkdtempSync(path.join(tmpdir(), 'gpu-relay-quick-'));
    runtime = await startLocalRuntime({
      port: 0,
      quiet: true,
      // A quick marketplace; the secrets stay npm start's defaults (nothing set).
      simulator: { minIntervalMs: 50, readyDelayMs: 500 },
      env: { ORDER_POLL_INTERVAL_SECONDS: '1', JOB_RETRY_BASE_MS: '10' },
    });
    card = publishLocalRelay(runtime, dir);
  }, 60_000);
  afterAll(async () => {
    card?.remove();
    await runtime?.close();
    rmSync(dir, { recursive: true, force: true });
  });

  it('rents a GPU with an empty environment, and prints no secret', async () => {
    // Act
    const run = await runCli(['create-order', '--gpu', 'RTX 4090', '--max-price', '0.5', '--wait', '--timeout', '45'], {
      cwd: dir,
      env: {},
      timeoutMs: 50_000,
    });
    // Assess
    expect(run.code).toBe(0);
    expect(stdoutJson(run)).toMatchObject({
      success: true,
      order_id: expect.any(Number),
      ssh_connection: expect.any(String),
      gpu: expect.arrayContaining([expect.stringContaining('4090')]),
    });
    for (const secret of [runtime.env.WEBHOOK_SECRET, runtime.env.CALLBACK_SIGNING_SECRET])
      expect(run.stdout + run.stderr).not.toContain(secret);
  });

  it('without the card (npm start stopped) it says how to get a secret', async () => {
    // Prepare
    card.remove();
    // Act
    const run = await runCli(['create-order', '--gpu', 'RTX 4090', '--max-price', '0.5'], { cwd: dir, env: {} });
    // Assess
    expect(run.code).toBe(2);
    expect(run.stderr).toContain('no webhook secret');
    expect(run.stderr).toContain('npm start');
  });
});
