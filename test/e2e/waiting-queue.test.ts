/**
 * The waiting queue's caps (issue 29 §5) and a revoked key's waiting tasks (§4), end to end against
 * the local runtime (dynalite with the waiting index, local Step Functions, the fleet watch, the
 * simulator over HTTP). Caps small enough to reach: MAX_WAITING_TASKS_PER_KEY=2, MAX_WAITING_TASKS=4.
 * - a key's 3rd standing order: 429 `too many waiting orders (2 for key ci)`, no task recorded; the
 *   default key's 3rd too (issue 38 §1: `(2 for key default)`);
 * - the relay's 5th: 429 `too many waiting orders (4)`, no task recorded;
 * - issue 38 §1: admissions that fail (max_price 1e200) hold no slot; a stale slot of a deleted key and
 *   a drifted count are repaired by the next sweeps;
 * - revoking ci fails its waiting tasks with `key ci revoked` (callback_url), once; a matching server
 *   that appears afterwards is not rented for them, and their places are free again;
 * - DELETE /admin/keys/{name} deletes a revoked key (issue 29 §7): the 201st key is refused 409
 *   `key limit reached (200)` until a revoked key is deleted; a deleted name is never reused.
 * Waits are on conditions with deadlines (callbacks, sweep counts, task views), never fixed sleeps.
 */
import { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { DynamoDBDocumentClient, ScanCommand, UpdateCommand } from '@aws-sdk/lib-dynamodb';
import { startTestRuntime, TEST_WEBHOOK_SECRET, testDialect, type LocalRuntime } from '../helpers/local-runtime';
import { request, signedPost, startReceiver, v2Headers, type Receiver } from '../helpers/receivers';
import { uniqueServer } from '../helpers/sim-servers';
import { e2eCalls, isResult, json } from '../helpers/e2e-calls';
import { keyCountOf, slotsHeld } from '../../lambdas/adapters/dynamodb/dynamodb-waiting-entries';

const dialect = testDialect();
const WAIT_MS = 45_000;
const GPU = 'ZETA Q1';

describe(`Waiting queue caps and revoked keys (${dialect} marketplace dialect)`, () => {
  let runtime: LocalRuntime;
  let callbacks: Receiver;
  let doc: DynamoDBDocumentClient;
  const secrets: Record<string, string> = {};
  const { sim, waitingView, moreSweeps, until } = e2eCalls(
    () => runtime,
    () => callbacks,
    WAIT_MS,
  );

  const standing = (tag: string, key?: string) =>
    signedPost(
      runtime.url,
      '/webhook/create-order',
      { gpu_type: GPU, wait_seconds: 600, callback_url: `${callbacks.url}/${tag}` },
      key ? secrets[key]! : TEST_WEBHOOK_SECRET,
      key ? { 'x-webhook-key-id': key } : {},
    );
  const held = (scope: string) => slotsHeld(doc, runtime.dynamo.tableName, scope === 'total' ? scope : `key:${scope}`);
  const countOf = async (prefix: string): Promise<number> => {
    const out = await doc.send(
      new ScanCommand({
        TableName: runtime.dynamo.tableName,
        FilterExpression: 'begins_with(pk, :p)',
        ExpressionAttributeValues: { ':p': prefix },
      }),
    );
    return out.Count ?? 0;
  };
  const taskCount = (): Promise<number> => countOf('TASK#');

  beforeAll(async () => {
    callbacks = await startReceiver();
    runtime = await startTestRuntime({
      dialect,
      env: {
        WATCH_INTERVAL_SECONDS: '1',
        CALLER_KEY_CACHE_SECONDS: '1',
        MAX_WAITING_TASKS_PER_KEY: '2',
        MAX_WAITING_TASKS: '4',
        // The key-limit test creates 200 keys from one address.
        MAX_REQUESTS_PER_MINUTE: '600',
      },
    });
    doc = DynamoDBDocumentClient.from(
      new DynamoDBClient({
        endpoint: runtime.dynamo.endpoint,
        region: 'us-east-1',
        credentials: { accessKeyId: 'local', secretAccessKey: 'local' },
      }),
    );
    for (const name of ['ci', 'qa', 'leak']) {
      const created = await signedPost(
        runtime.url,
        '/admin/keys',
        { name, scopes: ['order', 'read', 'cancel'] },
        TEST_WEBHOOK_SECRET,
      );
      expect(created.status).toBe(201);
      secrets[name] = String(created.json?.secret);
    }
  });
  afterAll(async () => {
    doc?.destroy();
    await runtime?.close();
    await callbacks?.close();
  });

  const ciTasks: string[] = [];
  const defaultTasks: string[] = [];

  it("refuses a key's standing order over its cap and the relay's over its own with 429, recording nothing", async () => {
    for (const tag of ['ci-1', 'ci-2']) {
      const res = await standing(tag, 'ci');
      expect(res.status).toBe(202);
      ciTasks.push(String(res.json?.task_id));
    }
    for (const id of ciTasks) await waitingView(id);
    const before = await taskCount();
    const third = await standing('ci-3', 'ci');
    expect(third).toMatchObject({ status: 429, json: { error: 'too many waiting orders (2 for key ci)' } });

    // The default key has a per-key cap too (issue 38 §1).
    for (const tag of ['d-1', 'd-2']) {
      const res = await standing(tag);
      expect(res.status).toBe(202);
      defaultTasks.push(String(res.json?.task_id));
    }
    expect(await standing('d-3')).toMatchObject({
      status: 429,
      json: { error: 'too many waiting orders (2 for key default)' },
    });
    // The relay's cap holds for a key with room of its own.
    const fifth = await standing('qa-1', 'qa');
    expect(fifth).toMatchObject({ status: 429, json: { error: 'too many waiting orders (4)' } });
    expect(await taskCount()).toBe(before + 2);
    expect(callbacks.requests.filter((r) => ['/ci-3', '/d-3', '/qa-1'].includes(r.path))).toEqual([]);
    expect(await held('total')).toBe(4);
  }, 90_000);

  it("fails a revoked key's waiting tasks with `key ci revoked`, once, and never rents a server for them", async () => {
    const revoked = await signedPost(runtime.url, '/admin/keys/ci/revoke', '', TEST_WEBHOOK_SECRET);
    expect(revoked.status).toBe(200);
    for (const tag of ['ci-1', 'ci-2'])
      expect(json(await callbacks.waitFor((r) => isResult(r, `/${tag}`), WAIT_MS))).toEqual({
        success: false,
        error: 'key ci revoked',
      });
    // A matching server appears afterwards: the default key's older standing order gets it, none of ci's.
    sim().addServer(uniqueServer(9871, GPU, sim().nativeCoin));
    expect(json(await callbacks.waitFor((r) => isResult(r, '/d-1'), WAIT_MS))).toMatchObject({ success: true });
    await moreSweeps(2);
    expect(callbacks.requests.filter((r) => isResult(r, '/ci-1') || isResult(r, '/ci-2'))).toHaveLength(2);
    expect(
      sim()
        .orders()
        .filter((o) => o.renting_server === 9871),
    ).toHaveLength(1);
    // Their places are free again: the relay takes new standing orders (d-2 waits; three free places).
    const next = await standing('d-4');
    expect(next.status).toBe(202);
    // Clean up
    for (const id of [defaultTasks[1]!, String(next.json?.task_id)])
      await signedPost(runtime.url, '/webhook/cancel-task', { task_id: id }, TEST_WEBHOOK_SECRET);
  }, 120_000);

  it("gives back the slots of failed admissions, frees a deleted key's and repairs drift within a sweep (issue 38 §1)", async () => {
    const admin = (method: 'POST' | 'DELETE', path: string) =>
      request(`${runtime.url}${path}`, {
        method,
        headers: { 'content-type': 'application/json', ...v2Headers(TEST_WEBHOOK_SECRET, method, path, '') },
      });
    // Five admissions whose entry DynamoDB cannot store (max_price 1e200): refused, nothing held.
    for (let i = 0; i < 5; i += 1) {
      const res = await signedPost(
        runtime.url,
        '/webhook/create-order',
        { gpu_type: GPU, max_price: 1e200, wait_seconds: 600 },
        secrets.leak!,
        { 'x-webhook-key-id': 'leak' },
      );
      expect(res.status).toBeGreaterThanOrEqual(400);
    }
    expect(await held('leak')).toBe(0);
    // A slot of leak without an entry (a crash between the two writes), and a relay count that drifted.
    await doc.send(
      new UpdateCommand({
        TableName: runtime.dynamo.tableName,
        Key: { pk: 'WAITSLOTS#total' },
        UpdateExpression: 'SET #slot = :slot, #n = #n + :three, #k = :one',
        ExpressionAttributeNames: {
          '#slot': 's0a1b2c3d-0000-4000-8000-00000000dead',
          '#n': 'n',
          '#k': keyCountOf('leak'),
        },
        ExpressionAttributeValues: { ':slot': { key: 'leak', at: 0 }, ':three': 3, ':one': 1 },
      }),
    );
    // (The watch sweeps every second: it may repair this before the key is even revoked.)
    // The key is revoked and deleted; within a sweep or two its slot is free and the counts are the queue's again.
    expect((await admin('POST', '/admin/keys/leak/revoke')).status).toBe(200);
    expect((await admin('DELETE', '/admin/keys/leak')).status).toBe(200);
    await moreSweeps(2);
    expect(await held('leak')).toBe(0);
    await until(async () => (await held('total')) === (await countOf('WAIT#')), 'slots counted as the queue holds');
    // qa is not needed any more (the key-limit test below counts keys).
    expect((await admin('POST', '/admin/keys/qa/revoke')).status).toBe(200);
    expect((await admin('DELETE', '/admin/keys/qa')).status).toBe(200);
  }, 90_000);

  it('deletes a revoked key (DELETE /admin/keys/{name}), and answers the 201st key 409 `key limit reached (200)`', async () => {
    // The admin routes need signature v2 whatever SIGNATURE_VERSIONS says (issue 29 §1).
    const admin = (method: 'POST' | 'DELETE', path: string, body = '') =>
      request(`${runtime.url}${path}`, {
        method,
        headers: { 'content-type': 'application/json', ...v2Headers(TEST_WEBHOOK_SECRET, method, path, body) },
        ...(body ? { body } : {}),
      });
    // ci was revoked above; an active key cannot be deleted.
    const ops = await admin('POST', '/admin/keys', JSON.stringify({ name: 'ops', scopes: ['read'] }));
    expect(ops.status).toBe(201);
    expect(await admin('DELETE', '/admin/keys/ops')).toMatchObject({
      status: 409,
      json: { error: 'key ops is not revoked (revoke it first)' },
    });
    // Fill up to 200 keys (ci, ops and 198 more), then one more is refused with a 409, never a 500.
    for (let i = 0; i < 198; i += 1)
      expect((await admin('POST', '/admin/keys', JSON.stringify({ name: `bulk-${i}`, scopes: ['read'] }))).status).toBe(
        201,
      );
    const extra = JSON.stringify({ name: 'extra', scopes: ['read'] });
    expect(await admin('POST', '/admin/keys', extra)).toMatchObject({
      status: 409,
      json: { error: 'key limit reached (200)' },
    });
    // Deleting the revoked ci makes room; its name stays taken.
    expect(await admin('DELETE', '/admin/keys/ci')).toMatchObject({
      status: 200,
      json: { name: 'ci', status: 'deleted' },
    });
    expect((await admin('POST', '/admin/keys', extra)).status).toBe(201);
    expect(await admin('POST', '/admin/keys', JSON.stringify({ name: 'ci', scopes: ['read'] }))).toMatchObject({
      status: 409,
      json: { error: 'key ci exists (names are never reused, even revoked)' },
    });
  }, 120_000);
});
