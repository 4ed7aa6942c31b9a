/**
 * `npm run state:snapshot -- <dir>` (issue 39 §4, backups): taken while `npm start` runs, the copy is
 * a state a stopped relay starts from, holding what the running one held at that instant: caller
 * keys, a lease, a standing order waiting, and a cancel job in flight (its marketplace answer held),
 * which the relay started on the copy delivers again and reports once. What the first relay does
 * after the snapshot (a key created later) is not in it. The first relay keeps serving meanwhile. A
 * second snapshot, of the same folder after that relay was killed (its control card left behind),
 * reads the folder directly. Both relays run as child processes against a simulator this test runs.
 */
import { spawn } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import * as path from 'node:path';
import { hmacHex } from '../../lambdas/domain/signing';
import { startSimulator, type MarketplaceSimulator } from '../../local/simulator/marketplace-simulator';
import { FAST_SIMULATOR, TEST_WEBHOOK_SECRET } from '../helpers/local-runtime';
import { request, signedPost, startReceiver, v2Headers, type Receiver } from '../helpers/receivers';
import { relayEnvFor, startRelayProcess, type RelayProcess } from '../helpers/relay-process';
import { waitUntil } from '../helpers/until';

type Json = Record<string, unknown>;
const WAIT_MS = 100_000;
const ROOT = path.resolve(__dirname, '../..');

/** Runs `npm run state:snapshot -- <dest>`'s script on STATE_DIR=`stateDir`. */
const snapshotCommand = (stateDir: string, dest: string): Promise<{ code: number | null; output: string }> =>
  new Promise((resolve) => {
    const child = spawn(path.join(ROOT, 'node_modules', '.bin', 'tsx'), ['scripts/state-snapshot.ts', dest], {
      cwd: ROOT,
      env: { ...process.env, STATE_DIR: stateDir },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let output = '';
    child.stdout.on('data', (c: Buffer) => (output += c.toString('utf8')));
    child.stderr.on('data', (c: Buffer) => (output += c.toString('utf8')));
    child.on('close', (code) => resolve({ code, output }));
  });

describe('npm run state:snapshot: a copy of a running relay that a stopped relay starts from', () => {
  let sim: MarketplaceSimulator;
  let callbacks: Receiver;
  let first: RelayProcess | undefined;
  let second: RelayProcess | undefined;
  const work = mkdtempSync(path.join(tmpdir(), 'relay-snap-'));
  const stateDir = path.join(work, 'state');
  const snapshotDir = path.join(work, 'snapshot');
  const stoppedSnapshotDir = path.join(work, 'snapshot-stopped');
  let env: Record<string, string>;

  beforeAll(async () => {
    sim = await startSimulator({ ...FAST_SIMULATOR, dialect: 'spec' });
    callbacks = await startReceiver();
    env = {
      ...relayEnvFor(sim),
      WATCH_INTERVAL_SECONDS: '1',
      ORDER_READY_TIMEOUT_SECONDS: '90',
      // Unset: the relay generates the callback signing key and keeps it with the state.
      CALLBACK_SIGNING_SECRET: '',
    };
    // The first relay waits up to 50 s for a marketplace answer: its cancel_order (held 60 s by the
    // simulator) stays in flight until the relay is killed, however slow the machine, instead of
    // timing out at 5 s and being retried and finished before the kill (the copy would then replay a
    // job the first relay had already reported).
    first = await startRelayProcess({ stateDir, env: { ...env, MARKETPLACE_TIMEOUT_MS: '50000' } });
  }, 120_000);
  afterAll(async () => {
    await first?.stop('SIGKILL');
    await second?.stop('SIGKILL');
    await callbacks?.close();
    await sim?.close();
    rmSync(work, { recursive: true, force: true });
  });

  const resultsFor = (tag: string) =>
    callbacks.requests.filter((r) => r.path === `/${tag}` && !(r.json as Json | undefined)?.event);
  const post = (relay: RelayProcess, p: string, body: Json) => signedPost(relay.url, p, body, TEST_WEBHOOK_SECRET);
  const accept = async (relay: RelayProcess, route: string, tag: string, body: Json): Promise<string> => {
    const res = await post(relay, route, { callback_url: `${callbacks.url}/${tag}`, ...body });
    expect(res.status).toBe(202);
    return String(res.json?.task_id);
  };
  const task = async (relay: RelayProcess, taskId: string): Promise<Json> => {
    const p = `/webhook/tasks/${taskId}`;
    return (await request(`${relay.url}${p}`, { headers: { 'x-webhook-signature': hmacHex(TEST_WEBHOOK_SECRET, p) } }))
      .json as Json;
  };
  const keyNames = async (relay: RelayProcess): Promise<string[]> => {
    const res = await request(`${relay.url}/admin/keys`, {
      headers: v2Headers(TEST_WEBHOOK_SECRET, 'GET', '/admin/keys'),
    });
    expect(res.status).toBe(200);
    return ((res.json as { keys: { name: string; revoked_at?: string }[] }).keys ?? [])
      .filter((k) => !k.revoked_at && k.name !== 'default')
      .map((k) => k.name)
      .sort();
  };
  /** The lease end the status job reports for `orderId`. */
  const leaseOf = async (relay: RelayProcess, tag: string, orderId: unknown): Promise<unknown> => {
    await accept(relay, '/webhook/status', tag, {});
    await waitUntil(() => resultsFor(tag).length === 1, `the ${tag} result`, WAIT_MS);
    const orders = (resultsFor(tag)[0]!.json as { orders?: Json[] }).orders ?? [];
    return orders.find((o) => o.order_id === orderId)?.lease_expires_at;
  };

  it('holds the keys, the lease, the standing order and the job in flight; a relay on it carries them on', async () => {
    const relay = first!;
    // Prepare: a key, an order with a 2 h lease, a standing order waiting, a cancel job in flight
    const created = await post(relay, '/admin/keys', { name: 'team-a', scopes: ['order', 'read'] });
    expect(created.status).toBe(201);
    await accept(relay, '/webhook/create-order', 'leased', { gpu_type: 'RTX 4090', use_spot: false, max_hours: 2 });
    await accept(relay, '/webhook/create-order', 'to-cancel', { gpu_type: 'RTX 4090', use_spot: false });
    await waitUntil(
      () => resultsFor('leased').length === 1 && resultsFor('to-cancel').length === 1,
      'two orders',
      WAIT_MS,
    );
    const leasedOrder = (resultsFor('leased')[0]!.json as Json).order_id;
    const cancelledOrder = (resultsFor('to-cancel')[0]!.json as Json).order_id;
    const leaseEnd = await leaseOf(relay, 'status-before', leasedOrder);
    expect(leaseEnd).toEqual(expect.any(Number));
    const waitingTask = await accept(relay, '/webhook/create-order', 'waiting', {
      gpu_type: 'OMEGA W9',
      max_price: 0.5,
      max_hours: 1,
      wait_seconds: 3_600,
    });
    await waitUntil(async () => (await task(relay, waitingTask)).state === 'waiting', 'the standing order', WAIT_MS);
    sim.control.inject({ endpoint: 'cancel_order', kind: 'slow', delayMs: 60_000 });
    const cancelTask = await accept(relay, '/webhook/cancel-order', 'cancel', { order_id: cancelledOrder });
    await waitUntil(() => (sim.control.counters().calls.cancel_order ?? 0) >= 1, 'cancel_order sent', WAIT_MS);

    // Act: snapshot the running relay, which goes on serving and changing its state
    const taken = await snapshotCommand(stateDir, snapshotDir);
    expect(taken).toMatchObject({ code: 0, output: expect.stringMatching(/the running relay/) });
    expect((await request(`${relay.url}/health`)).status).toBe(200);
    expect((await post(relay, '/admin/keys', { name: 'after-snapshot', scopes: ['read'] })).status).toBe(201);
    // The box is lost; a relay starts on the copy
    await relay.stop('SIGKILL');
    first = undefined;
    sim.control.clearFaults();
    second = await startRelayProcess({ stateDir: snapshotDir, env });

    // Assert: everything the first relay held at the snapshot, nothing it did after
    expect(await keyNames(second)).toEqual(['team-a']);
    expect(await leaseOf(second, 'status-after', leasedOrder)).toBe(leaseEnd);
    expect(await task(second, waitingTask)).toMatchObject({ state: 'waiting' });
    expect(second.output()).toMatch(/carried on: 0 workflow\(s\), 1 job\(s\)/);
    await waitUntil(() => resultsFor('cancel').length >= 1, 'the cancel result', WAIT_MS);
    expect(resultsFor('cancel').map((r) => r.json)).toEqual([expect.objectContaining({ success: true })]);
    expect(await task(second, cancelTask)).toMatchObject({ state: 'succeeded' });
    expect(sim.control.orders().find((o) => o.order_id === cancelledOrder)).toMatchObject({ completed: true });
    // The kept callback signing key came along: receivers verify the new relay's deliveries as before
    expect(readFileSync(path.join(snapshotDir, 'callback-signing-secret'), 'utf8')).toBe(
      readFileSync(path.join(stateDir, 'callback-signing-secret'), 'utf8'),
    );
    expect(JSON.parse(readFileSync(path.join(snapshotDir, 'state.json'), 'utf8'))).toMatchObject({
      snapshot: { of: stateDir },
    });

    // A snapshot of the stopped folder (its dead relay's control card still there) reads the folder
    expect(existsSync(path.join(stateDir, 'control.json'))).toBe(true);
    const stopped = await snapshotCommand(stateDir, stoppedSnapshotDir);
    expect(stopped).toMatchObject({ code: 0, output: expect.stringMatching(/the stopped state/) });
    expect(existsSync(path.join(stoppedSnapshotDir, 'state.json'))).toBe(true);
    // and a running relay's own folder is never overwritten by one
    const refused = await snapshotCommand(snapshotDir, stoppedSnapshotDir);
    expect(refused).toMatchObject({ code: 1, output: expect.stringMatching(/not empty/) });
  }, 300_000);
});
