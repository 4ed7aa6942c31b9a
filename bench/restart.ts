/**
 * `npx tsx bench/restart.ts` (issue 39): how long `npm start` takes from launch to a `/health`
 * answer on a kept state of N items (default 10,000; `BENCH_ITEMS`), and what the local TTL sweep
 * leaves of that state after a simulated idle week. A measurement to read, never an assertion:
 * figures on the shared machine vary by ±30 %. Not part of `npm run bench`'s sections (it spawns
 * `npm start`'s own entry, several times).
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, readdirSync, rmSync, statSync } from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { BatchWriteItemCommand, DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { RELAY_TABLE } from '../contract/resources';
import { createTtlSweeper } from '../local/ttl-sweep';

const ROOT = path.resolve(__dirname, '..');
const ITEMS = Number(process.env.BENCH_ITEMS || 10_000);
const STARTS = 3;

interface Relay {
  readonly url: string;
  readonly dynamo: string;
  readonly healthMs: number;
  readonly readyMs: number;
  stop(): Promise<void>;
}

const startRelay = async (stateDir: string): Promise<Relay> => {
  const t0 = performance.now();
  const child: ChildProcess = spawn(path.join(ROOT, 'node_modules', '.bin', 'tsx'), ['local/start.ts'], {
    cwd: ROOT,
    env: {
      ...process.env,
      PATH: `${path.join(ROOT, 'node_modules', '.bin')}${path.delimiter}${process.env.PATH ?? ''}`,
      PORT: '0',
      STATE_DIR: stateDir,
      WEBHOOK_SECRET: 'bench-restart-secret',
      POWERTOOLS_LOG_LEVEL: 'ERROR',
      GPU_RELAY_SKIP_INSTALL_CHECK: '1',
    },
    stdio: ['ignore', 'pipe', 'pipe'],
    detached: true,
  });
  let output = '';
  child.stdout?.on('data', (c: Buffer) => (output += c.toString('utf8')));
  child.stderr?.on('data', (c: Buffer) => (output += c.toString('utf8')));
  const exited = new Promise<void>((resolve) => child.once('close', () => resolve()));
  let url: string | undefined;
  for (;;) {
    if (child.exitCode !== null) throw new Error(`relay exited:\n${output}`);
    url ??= /API\s+(http:\/\/127\.0\.0\.1:\d+)/.exec(output)?.[1];
    if (url) {
      const ok = await fetch(`${url}/health`).then(
        (r) => r.ok,
        () => false,
      );
      if (ok) break;
    }
    await new Promise((r) => setTimeout(r, 25));
  }
  const healthMs = performance.now() - t0;
  return {
    url,
    dynamo: /DynamoDB (http:\/\/127\.0\.0\.1:\d+)/.exec(output)?.[1] ?? '',
    healthMs,
    readyMs: Number(/ready in (\d+) ms/.exec(output)?.[1]),
    stop: async () => {
      if (child.pid && child.exitCode === null) process.kill(-child.pid, 'SIGTERM');
      await exited;
    },
  };
};

const folderBytes = (dir: string): number =>
  readdirSync(dir, { withFileTypes: true }).reduce(
    (sum, entry) =>
      sum + (entry.isDirectory() ? folderBytes(path.join(dir, entry.name)) : statSync(path.join(dir, entry.name)).size),
    0,
  );

const median = (values: number[]): number => [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)]!;
const mb = (bytes: number): string => `${(bytes / 1024 / 1024).toFixed(2)} MB`;

const main = async (): Promise<void> => {
  const stateDir = mkdtempSync(path.join(os.tmpdir(), 'bench-restart-'));
  try {
    // Prepare: a state of ITEMS items, ~300 bytes each; 90 % expire within the coming week
    // (rate-limit windows, caches, claims), 10 % have no ttl (keys, ledger lines, tasks).
    const first = await startRelay(stateDir);
    const client = new DynamoDBClient({
      endpoint: first.dynamo,
      region: 'us-east-1',
      credentials: { accessKeyId: 'local', secretAccessKey: 'local' },
    });
    const nowSeconds = Math.floor(Date.now() / 1000);
    const week = 7 * 24 * 3600;
    for (let i = 0; i < ITEMS; i += 25) {
      const batch = Array.from({ length: Math.min(25, ITEMS - i) }, (_, j) => {
        const n = i + j;
        const expiring = n % 10 !== 0;
        return {
          PutRequest: {
            Item: {
              [RELAY_TABLE.partitionKey]: { S: `BENCH#${n}` },
              payload: { S: 'x'.repeat(256) },
              ...(expiring ? { [RELAY_TABLE.ttlAttribute]: { N: String(nowSeconds + 3600 + (n % week)) } } : {}),
            },
          },
        };
      });
      await client.send(new BatchWriteItemCommand({ RequestItems: { [RELAY_TABLE.logicalName]: batch } }));
    }
    client.destroy();
    await first.stop();
    const seededBytes = folderBytes(stateDir);

    // Act 1: restarts on the kept state
    const health: number[] = [];
    const ready: number[] = [];
    for (let i = 0; i < STARTS; i += 1) {
      const relay = await startRelay(stateDir);
      health.push(relay.healthMs);
      ready.push(relay.readyMs);
      await relay.stop();
    }

    // Act 2: an idle week later, the TTL sweep (as the runtime runs it, with the clock a week on)
    const relay = await startRelay(stateDir);
    const sweeper = createTtlSweeper({
      endpoint: relay.dynamo,
      tableName: RELAY_TABLE.logicalName,
      now: () => Date.now() + (week + 2 * 3600) * 1000,
    });
    const t = performance.now();
    const swept = await sweeper.sweep();
    const sweepMs = performance.now() - t;
    sweeper.close();
    await relay.stop();
    const afterSweepBytes = folderBytes(stateDir);
    // LevelDB compacts its log when the folder is opened again.
    const reopened = await startRelay(stateDir);
    await reopened.stop();
    const afterReopenBytes = folderBytes(stateDir);

    console.log(`restart on a kept state of ${ITEMS} items (${mb(seededBytes)} on disk), ${STARTS} starts:`);
    console.log(
      `  launch to /health 200: median ${Math.round(median(health))} ms (${health.map(Math.round).join(', ')})`,
    );
    console.log(`  runtime ready (banner): median ${median(ready)} ms`);
    console.log(`idle week: TTL sweep deleted ${swept.deleted} of ${swept.scanned} items in ${Math.round(sweepMs)} ms`);
    console.log(
      `  state on disk: ${mb(afterSweepBytes)} after the sweep, ${mb(afterReopenBytes)} after the next start`,
    );
  } finally {
    rmSync(stateDir, { recursive: true, force: true });
  }
};

main().catch((error: unknown) => {
  console.error(error);
  process.exit(1);
});
