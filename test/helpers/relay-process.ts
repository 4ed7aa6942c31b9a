/**
 * `npm start`'s entry (local/start.ts) as a child process on a kept state, for tests that stop it
 * (SIGTERM) or kill it (SIGKILL) and start it again on the same STATE_DIR. The marketplace is a
 * simulator the test runs itself (MARKETPLACE_URL), so it outlives the relay as a real one would.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import * as path from 'node:path';
import type { MarketplaceSimulator } from '../../local/simulator/marketplace-simulator';
import { FAST_ENV, FAST_LIVE_ENV } from './local-runtime';
import { waitUntil } from './until';

const ROOT = path.resolve(__dirname, '../..');

export interface RelayProcess {
  readonly url: string;
  /** Everything the process printed so far. */
  output(): string;
  /** Sends `signal` to the whole process group and resolves once it exited. */
  stop(signal: 'SIGTERM' | 'SIGKILL'): Promise<void>;
  /** SIGKILL to the whole process group, synchronously (a kill at an exact point); `stop` then waits. */
  killNow(): void;
  /** Milliseconds from spawn to the banner (the API answers by then). */
  readonly startedInMs: number;
}

/** The relay's settings against an external simulator, as startLocalRuntime would set them for an embedded one. */
export const relayEnvFor = (sim: MarketplaceSimulator): Record<string, string> => ({
  ...FAST_ENV,
  ...(sim.dialect === 'live' ? { ...FAST_LIVE_ENV, DEFAULT_CURRENCY: 'CLORE-Blockchain' } : {}),
  // The spec dialect has no create_order spacing (the simulator's createIntervalMs, 0): startLocalRuntime
  // passes it on, and so must a relay started apart, or it paces creates at production's 5 s.
  ...(sim.dialect === 'spec'
    ? {
        RENTER_FEE_PERCENT: '0',
        ORDER_CREATION_FEE_USD: '0',
        MARKETPLACE_CREATE_INTERVAL_MS: String(sim.createIntervalMs),
      }
    : {}),
  MARKETPLACE_URL: sim.url,
  MARKETPLACE_API_KEY: sim.apiKey,
  // The files on a relay process poll task views and the ledger every 100 ms from one address: at the
  // default 60 per minute a wait of a few seconds fills the window and every later poll is refused
  // (429) until it slides, which a loaded machine reaches sooner. The most the setting allows.
  MAX_REQUESTS_PER_MINUTE: '600',
});

export const startRelayProcess = async (options: {
  readonly stateDir: string;
  readonly env: Readonly<Record<string, string>>;
  readonly args?: readonly string[];
  readonly timeoutMs?: number;
}): Promise<RelayProcess> => {
  const t0 = Date.now();
  const child: ChildProcess = spawn(
    path.join(ROOT, 'node_modules', '.bin', 'tsx'),
    ['local/start.ts', ...(options.args ?? [])],
    {
      cwd: ROOT,
      env: {
        ...process.env,
        PATH: `${path.join(ROOT, 'node_modules', '.bin')}${path.delimiter}${process.env.PATH ?? ''}`,
        PORT: '0',
        STATE_DIR: options.stateDir,
        GPU_RELAY_SKIP_INSTALL_CHECK: '1',
        POWERTOOLS_LOG_LEVEL: 'ERROR',
        ...options.env,
      },
      stdio: ['ignore', 'pipe', 'pipe'],
      detached: true,
    },
  );
  let output = '';
  child.stdout?.on('data', (chunk: Buffer) => (output += chunk.toString('utf8')));
  child.stderr?.on('data', (chunk: Buffer) => (output += chunk.toString('utf8')));
  const exited = new Promise<void>((resolve) => child.once('close', () => resolve()));
  let gone = false;
  void exited.then(() => (gone = true));
  const signalGroup = (signal: 'SIGTERM' | 'SIGKILL'): void => {
    if (gone || !child.pid) return;
    try {
      process.kill(-child.pid, signal);
    } catch {
      // already gone
    }
  };
  const stop = async (signal: 'SIGTERM' | 'SIGKILL'): Promise<void> => {
    signalGroup(signal);
    await exited;
  };
  try {
    await waitUntil(
      () => {
        if (gone) throw new Error(`the relay exited before its banner:\n${output}`);
        return /API\s+http:\/\/127\.0\.0\.1:\d+/.test(output);
      },
      'the relay banner',
      options.timeoutMs ?? 90_000,
    );
  } catch (error) {
    await stop('SIGKILL');
    throw error;
  }
  const port = Number(/API\s+http:\/\/127\.0\.0\.1:(\d+)/.exec(output)?.[1]);
  return {
    url: `http://127.0.0.1:${port}`,
    output: () => output,
    stop,
    killNow: () => signalGroup('SIGKILL'),
    startedInMs: Date.now() - t0,
  };
};
