/**
 * Caller keys end to end (issue 24) against the local runtime (dynalite, fauxqs, local Step
 * Functions, the simulator over HTTP): keys are created through the signed admin route; a key
 * without `cancel` gets 403 and nothing is queued; a key cannot cancel another key's order (its
 * result says so and the order stays); a revoked key is refused; requests without X-Webhook-Key-Id
 * keep the spec's behaviour. Jest project `e2e` (key rules are the relay's own: see jest.config.js).
 * Waits are on conditions with deadlines, never fixed sleeps.
 */
import { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { DynamoDBDocumentClient, GetCommand, ScanCommand } from '@aws-sdk/lib-dynamodb';
import { startTestRuntime, TEST_WEBHOOK_SECRET, testDialect } from '../helpers/local-runtime';
import type { LocalRuntime } from '../helpers/local-runtime';
import { signedPost, startReceiver } from '../helpers/receivers';
import { runCli } from '../unit/cli/run-cli';
import type { ReceivedRequest, Receiver } from '../helpers/receivers';

const WAIT_MS = 45_000;
const dialect = testDialect();

type Json = Record<string, unknown>;
const json = (r: ReceivedRequest): Json => (r.json ?? {}) as Json;
const isResult = (r: ReceivedRequest, path: string): boolean => r.path === path && json(r).event === undefined;

describe(`Caller keys (${dialect} marketplace dialect)`, () => {
  let runtime: LocalRuntime;
  let callbacks: Receiver;
  let doc: DynamoDBDocumentClient;
  let seq = 0;
  const secrets: Record<string, string> = {};

  const post = (path: string, body: Json, key?: string) =>
    signedPost(
      runtime.url,
      path,
      body,
      key ? secrets[key] : TEST_WEBHOOK_SECRET,
      key ? { 'x-webhook-key-id': key } : {},
    );
  /** Posts a signed request as `key` and waits for its one task result. */
  const run = async (path: string, body: Json, key?: string): Promise<Json> => {
    seq += 1;
    const tag = `/r${seq}`;
    const res = await post(path, { ...body, callback_url: `${callbacks.url}${tag}` }, key);
    expect(res.status).toBe(202);
    return json(await callbacks.waitFor((r) => isResult(r, tag), WAIT_MS));
  };
  const createKey = async (name: string, scopes: string[], extra: Json = {}): Promise<void> => {
    const res = await post('/admin/keys', { name, scopes, ...extra });
    expect(res.status).toBe(201);
    expect(res.json).toMatchObject({ name, scopes, status: 'active', secret: expect.stringMatching(/^rk_/) });
    secrets[name] = String(res.json?.secret);
  };
  const taskCount = async (): Promise<number> => {
    const out = await doc.send(
      new ScanCommand({
        TableName: runtime.dynamo.tableName,
        FilterExpression: 'begins_with(pk, :p)',
        ExpressionAttributeValues: { ':p': 'TASK#' },
      }),
    );
    return out.Count ?? 0;
  };
  const simOrderActive = (orderId: number): boolean =>
    runtime.simulator?.control
      .orders()
      .some(
        (o) => (o as { order_id: number }).order_id === orderId && (o as { status?: string }).status !== 'expired',
      ) ?? false;

  beforeAll(async () => {
    callbacks = await startReceiver();
    runtime = await startTestRuntime({ dialect, env: { CALLER_KEY_CACHE_SECONDS: '1' } });
    doc = DynamoDBDocumentClient.from(
      new DynamoDBClient({
        endpoint: runtime.dynamo.endpoint,
        region: 'us-east-1',
        credentials: { accessKeyId: 'local', secretAccessKey: 'local' },
      }),
    );
    await createKey('ci', ['order', 'read']);
    await createKey('ops', ['order', 'cancel', 'read']);
  });
  afterAll(async () => {
    doc?.destroy();
    await runtime?.close();
    await callbacks?.close();
  });

  it('stores key secrets only sealed: the table never holds a secret in clear', async () => {
    const { Item } = await doc.send(new GetCommand({ TableName: runtime.dynamo.tableName, Key: { pk: 'KEYS#all' } }));
    const stored = JSON.stringify(Item);
    expect(stored).toContain('"ci"');
    for (const secret of Object.values(secrets)) expect(stored).not.toContain(secret);
  });

  it('answers 403 `key ci may not cancel` to a key without the scope, and queues nothing', async () => {
    const before = await taskCount();
    const res = await post('/webhook/cancel-order', { order_id: 1 }, 'ci');
    expect(res.status).toBe(403);
    expect(res.json).toEqual({ error: 'key ci may not cancel' });
    expect(await taskCount()).toBe(before);
  });

  it("refuses to cancel another key's order: the result says it is not its order and the order stays", async () => {
    // Prepare: ci places an order
    const placed = await run('/webhook/create-order', { gpu_type: 'RTX 4090' }, 'ci');
    expect(placed).toMatchObject({ success: true, order_id: expect.any(Number) });
    const orderId = placed.order_id as number;

    // Act: ops (which may cancel) tries to cancel it
    const refused = await run('/webhook/cancel-order', { order_id: orderId }, 'ops');

    // Assess
    expect(refused).toEqual({ success: false, error: `order ${orderId} is not an order of key ops` });
    expect(simOrderActive(orderId)).toBe(true);
    // ops' status does not list it; the default key's does, and may cancel it
    const opsStatus = await run('/webhook/status', {}, 'ops');
    expect((opsStatus.orders as { order_id: number }[]).map((o) => o.order_id)).not.toContain(orderId);
    const allStatus = await run('/webhook/status', {});
    expect((allStatus.orders as { order_id: number }[]).map((o) => o.order_id)).toContain(orderId);
    expect(await run('/webhook/cancel-order', { order_id: orderId })).toMatchObject({
      success: true,
      order_id: orderId,
      status: 'cancelled',
    });
  });

  it('refuses a revoked key with 401 Invalid signature on every route instance once their cache (CALLER_KEY_CACHE_SECONDS=1) expires', async () => {
    await createKey('temp', ['read']);
    expect((await post('/webhook/status', {}, 'temp')).status).toBe(202);
    const revoked = await signedPost(runtime.url, '/admin/keys/temp/revoke', '', TEST_WEBHOOK_SECRET);
    expect(revoked).toMatchObject({ status: 200, json: { name: 'temp', status: 'revoked' } });
    // The status route's instance cached the key; it refuses it once its 1 s cache expires (deadline: 15 s).
    const deadline = Date.now() + 15_000;
    let res = await post('/webhook/status', {}, 'temp');
    while (res.status === 202 && Date.now() < deadline) {
      await new Promise((resolve) => setTimeout(resolve, 100));
      res = await post('/webhook/status', {}, 'temp');
    }
    expect(res).toMatchObject({ status: 401, json: { error: 'Invalid signature' } });
    const before = await taskCount();
    expect(await post('/webhook/status', {}, 'temp')).toMatchObject({
      status: 401,
      json: { error: 'Invalid signature' },
    });
    secrets.nobody = 'x';
    expect(await post('/webhook/status', {}, 'nobody')).toMatchObject({
      status: 401,
      json: { error: 'Invalid signature' },
    });
    expect(await taskCount()).toBe(before);
  });

  it('gpu-relay keys create / list / revoke, and --key signs as the new key', async () => {
    const env = { GPU_RELAY_URL: runtime.url, GPU_RELAY_SECRET: TEST_WEBHOOK_SECRET };
    const created = await runCli(
      ['keys', 'create', '--name', 'cli', '--scopes', 'read', '--orders-per-hour', '5', '--expires', '2099-01-31'],
      { env },
    );
    expect(created.code).toBe(0);
    const secret = /^secret: (rk_\S+)$/m.exec(created.stdout)?.[1];
    expect(secret).toBeDefined();
    const status = await runCli(['status', '--key', 'cli'], { env: { ...env, GPU_RELAY_SECRET: secret! } });
    expect(status).toMatchObject({ code: 0, stderr: '' });
    const listed = await runCli(['keys', 'list'], { env });
    expect(listed.stdout).toMatch(/^cli\s+active\s+read\s+5\s+-\s+2099-01-31/m);
    expect(listed.stdout).not.toContain(secret!);
    const revoked = await runCli(['keys', 'revoke', 'cli'], { env });
    expect(revoked).toMatchObject({ code: 0 });
    expect((await runCli(['keys', 'list'], { env })).stdout).toMatch(/^cli\s+revoked/m);
  });
});
