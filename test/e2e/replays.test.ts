/**
 * Replays end to end over real HTTP against the local runtime (issue 21): one signed request makes at
 * most one task, however many copies arrive at once.
 */
import { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { DynamoDBDocumentClient, ScanCommand } from '@aws-sdk/lib-dynamodb';
import { hmacHex, signedBytes } from '../../lambdas/domain/signing';
import { startTestRuntime, TEST_WEBHOOK_SECRET, testDialect } from '../helpers/local-runtime';
import type { LocalRuntime } from '../helpers/local-runtime';
import { request, startReceiver } from '../helpers/receivers';
import type { HttpAnswer, Receiver } from '../helpers/receivers';

const dialect = testDialect();

/** The exact bytes and headers of one signed, timestamped request, so it can be sent again verbatim. */
const signedRequest = (body: unknown, timestamp = String(Math.floor(Date.now() / 1000))) => {
  const raw = JSON.stringify(body);
  return {
    raw,
    headers: { 'content-type': 'application/json', 'x-webhook-timestamp': timestamp, 'x-webhook-signature': hmacHex(TEST_WEBHOOK_SECRET, signedBytes(raw, timestamp)) },
  };
};

describe(`Local runtime (${dialect} marketplace dialect): replayed requests`, () => {
  let runtime: LocalRuntime;
  let callbacks: Receiver;
  let doc: DynamoDBDocumentClient;

  /** Task records in the table: a request that made a task recorded it before its 202. */
  const taskCount = async (): Promise<number> => {
    const out = await doc.send(new ScanCommand({ TableName: runtime.dynamo.tableName, FilterExpression: 'begins_with(pk, :p)', ExpressionAttributeValues: { ':p': 'TASK#' } }));
    return out.Count ?? 0;
  };

  const send = (path: string, init: { raw: string; headers: Record<string, string> }): Promise<HttpAnswer> =>
    request(`${runtime.url}${path}`, { method: 'POST', headers: init.headers, body: init.raw });

  beforeAll(async () => {
    callbacks = await startReceiver();
    // Every copy counts toward the per-address limit: room for them all.
    runtime = await startTestRuntime({ dialect, env: { MAX_REQUESTS_PER_MINUTE: '600' } });
    doc = DynamoDBDocumentClient.from(new DynamoDBClient({
      endpoint: runtime.dynamo.endpoint, region: 'us-east-1', credentials: { accessKeyId: 'local', secretAccessKey: 'local' },
    }));
  });
  afterAll(async () => {
    doc?.destroy();
    await runtime?.close();
    await callbacks?.close();
  });

  it('20 concurrent copies of one signed create-order make one task and one order; every copy gets its task_id', async () => {
    // Prepare
    const before = (await request(`${runtime.env.MARKETPLACE_URL}/_sim/orders`)).json?.orders as unknown[];
    const tasksBefore = await taskCount();
    const signed = signedRequest({ gpu_type: 'RTX 4090', callback_url: `${callbacks.url}/copies` });
    // Act
    const answers = await Promise.all(Array.from({ length: 20 }, () => send('/webhook/create-order', signed)));
    const result = await callbacks.waitFor((r) => r.path === '/copies', 30_000);
    // Assess
    expect(answers.map((a) => a.status)).toEqual(Array(20).fill(202));
    const taskIds = new Set(answers.map((a) => a.json?.task_id));
    expect(taskIds.size).toBe(1);
    const [taskId] = [...taskIds];
    expect(answers.filter((a) => a.headers.get('idempotent-replayed') === 'true')).toHaveLength(19);
    expect(await taskCount()).toBe(tasksBefore + 1);
    expect(result.json).toMatchObject({ success: true, status: 'running' });
    const after = (await request(`${runtime.env.MARKETPLACE_URL}/_sim/orders`)).json?.orders as { order_id: number }[];
    expect(after.length - before.length).toBe(1);
    expect(after[after.length - 1]?.order_id).toBe((result.json as { order_id: number }).order_id);
    // One result, and the one task is the one every copy was told about.
    expect(callbacks.requests.filter((r) => r.path === '/copies')).toHaveLength(1);
    const task = await request(`${runtime.url}/webhook/tasks/${String(taskId)}`, {
      headers: (() => {
        const ts = String(Math.floor(Date.now() / 1000));
        return { 'x-webhook-timestamp': ts, 'x-webhook-signature': hmacHex(TEST_WEBHOOK_SECRET, signedBytes(`/webhook/tasks/${String(taskId)}`, ts)) };
      })(),
    });
    expect(task.json).toMatchObject({ task_id: taskId, state: 'succeeded' });
  });

  it('a copy sent later within the window is answered with the first task_id and queues nothing', async () => {
    // Prepare
    const signed = signedRequest({ callback_url: `${callbacks.url}/status-copy` });
    const first = await send('/webhook/status', signed);
    await callbacks.waitFor((r) => r.path === '/status-copy', 30_000);
    // Act
    const copy = await send('/webhook/status', signed);
    // Assess
    expect(first.status).toBe(202);
    expect(copy.status).toBe(202);
    expect(copy.json?.task_id).toBe(first.json?.task_id);
    expect(copy.headers.get('idempotent-replayed')).toBe('true');
    // Nothing was queued: a task is recorded before its 202, and the copy recorded none.
    const tasks = await taskCount();
    expect(await send('/webhook/status', signed)).toMatchObject({ status: 202, json: { task_id: first.json?.task_id } });
    expect(await taskCount()).toBe(tasks);
  });
});
