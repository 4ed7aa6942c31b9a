/**
 * Replays end to end over real HTTP against the local runtime (issue 21): a callback or lifecycle
 * event can never be used as a request (every kind of delivery, replayed verbatim to every signed
 * route, gets 401 and queues nothing), and one signed request makes at most one task, however many
 * copies arrive at once.
 */
import { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { DynamoDBDocumentClient, ScanCommand } from '@aws-sdk/lib-dynamodb';
import { hmacHex, signedBytes } from '../../lambdas/domain/signing';
import { startTestRuntime, TEST_WEBHOOK_SECRET, testDialect } from '../helpers/local-runtime';
import type { LocalRuntime } from '../helpers/local-runtime';
import { request, sendUntilNot503, startReceiver } from '../helpers/receivers';
import { deliveryVerifies } from '../helpers/receivers';
import type { HttpAnswer, ReceivedRequest, Receiver } from '../helpers/receivers';
import { ROUTES } from '../../contract/routes';

const dialect = testDialect();

/** The exact bytes and headers of one signed, timestamped request, so it can be sent again verbatim. */
const signedRequest = (body: unknown, timestamp = String(Math.floor(Date.now() / 1000))) => {
  const raw = JSON.stringify(body);
  return {
    raw,
    headers: {
      'content-type': 'application/json',
      'x-webhook-timestamp': timestamp,
      'x-webhook-signature': hmacHex(TEST_WEBHOOK_SECRET, signedBytes(raw, timestamp)),
    },
  };
};

describe(`Local runtime (${dialect} marketplace dialect): replayed requests`, () => {
  let runtime: LocalRuntime;
  let callbacks: Receiver;
  let doc: DynamoDBDocumentClient;

  /** Task records in the table: a request that made a task recorded it before its 202. */
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

  const send = (path: string, init: { raw: string; headers: Record<string, string> }): Promise<HttpAnswer> =>
    request(`${runtime.url}${path}`, { method: 'POST', headers: init.headers, body: init.raw });

  beforeAll(async () => {
    callbacks = await startReceiver();
    // Every copy counts toward the per-address limit: room for them all.
    // The fleet watch every second and a short warning window: lease and status events within seconds.
    runtime = await startTestRuntime({
      dialect,
      env: { MAX_REQUESTS_PER_MINUTE: '600', WATCH_INTERVAL_SECONDS: '1', LEASE_WARNING_SECONDS: '5' },
    });
    doc = DynamoDBDocumentClient.from(
      new DynamoDBClient({
        endpoint: runtime.dynamo.endpoint,
        region: 'us-east-1',
        credentials: { accessKeyId: 'local', secretAccessKey: 'local' },
      }),
    );
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
    // npm start gives each AWS call to its in-process emulators 10 s per attempt (2 s in AWS)
    expect(runtime.env.AWS_CALL_TIMEOUT_MS).toBe('10000');
    // Act
    const answers = await Promise.all(
      Array.from({ length: 20 }, () => sendUntilNot503(() => send('/webhook/create-order', signed))),
    );
    const result = await callbacks.waitFor((r) => r.path === '/copies', 30_000);
    // Assess
    expect(answers.map((a) => (a.status === 202 ? 202 : `${a.status} ${String(a.json?.error)}`))).toEqual(
      Array(20).fill(202),
    );
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
        return {
          'x-webhook-timestamp': ts,
          'x-webhook-signature': hmacHex(TEST_WEBHOOK_SECRET, signedBytes(`/webhook/tasks/${String(taskId)}`, ts)),
        };
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
    expect(await send('/webhook/status', signed)).toMatchObject({
      status: 202,
      json: { task_id: first.json?.task_id },
    });
    expect(await taskCount()).toBe(tasks);
  });

  it('every kind of delivery (results of each task kind, each lifecycle event), replayed verbatim to every signed route, gets 401 and queues nothing', async () => {
    // Prepare: make the relay send one of each kind to the receiver, each under its own path.
    const WAIT = 45_000;
    const json = (r: ReceivedRequest): Record<string, unknown> => (r.json ?? {}) as Record<string, unknown>;
    const post = async (path: string, body: Record<string, unknown>): Promise<void> => {
      expect((await send(path, signedRequest(body))).status).toBe(202);
    };
    const result = (
      path: string,
      match: (body: Record<string, unknown>) => boolean = () => true,
    ): Promise<ReceivedRequest> =>
      callbacks.waitFor((r) => r.path === path && json(r).event === undefined && match(json(r)), WAIT);
    const event = (path: string, name: string): Promise<ReceivedRequest> =>
      callbacks.waitFor((r) => r.path === path && json(r).event === name, WAIT);

    await post('/webhook/create-order', {
      gpu_type: 'RTX 4090',
      max_hours: 0.002,
      callback_url: `${callbacks.url}/leased`,
    });
    await post('/webhook/create-order', { gpu_type: 'RTX 4090', callback_url: `${callbacks.url}/watched` });
    await post('/webhook/create-order', { gpu_type: 'NoSuchGpuModel', callback_url: `${callbacks.url}/no-match` });
    await post('/webhook/cancel-order', { order_id: 999999, callback_url: `${callbacks.url}/cancel` });
    await post('/webhook/status', { callback_url: `${callbacks.url}/status` });
    await post('/webhook/price-alert', {
      gpu_type: 'RTX 4090',
      target_price: 0.0001,
      callback_url: `${callbacks.url}/alert-miss`,
    });
    await post('/webhook/price-alert', {
      gpu_type: 'RTX 3090',
      target_price: 1000,
      callback_url: `${callbacks.url}/alert-hit`,
    });
    const leased = await result('/leased');
    const watched = await result('/watched');
    const orderId = json(watched).order_id as number;
    await post('/webhook/extend-order', { order_id: orderId, hours: 1, callback_url: `${callbacks.url}/extend` });
    await post('/webhook/set-spot-price', {
      order_id: 999999,
      desired_price: 1,
      callback_url: `${callbacks.url}/spot`,
    });
    const deliveries: Record<string, ReceivedRequest> = {
      'create-order success': leased,
      'create-order failure': await result('/no-match'),
      'cancel-order result': await result('/cancel'),
      'status result': await result('/status'),
      'price-alert not met': await result('/alert-miss'),
      'price-alert matched': await result('/alert-hit', (b) => typeof b.task_id === 'string'),
      'price-alert queued create-order': await result('/alert-hit', (b) => b.order_id !== undefined),
      'extend-order result': await result('/extend'),
      'set-spot-price result': await result('/spot'),
      'order.lease_expiring': await event('/leased', 'order.lease_expiring'),
      'order.lease_expired': await event('/leased', 'order.lease_expired'),
    };
    runtime.simulator?.control.setOrder(orderId, { online: false });
    deliveries['order.status_changed'] = await event('/watched', 'order.status_changed');
    expect(json(leased)).toMatchObject({ success: true });

    // Every one is a genuine delivery: Standard Webhooks, the callback signing secret.
    for (const [kind, delivery] of Object.entries(deliveries))
      expect({ kind, verifies: deliveryVerifies(delivery) }).toEqual({ kind, verifies: true });

    // Act: replay each verbatim (its exact body and every header) to every signed route.
    const tasksBefore = await taskCount();
    const ordersBefore = runtime.simulator?.control.orders().length;
    const answers: { kind: string; route: string; status: number; error: unknown }[] = [];
    for (const [kind, delivery] of Object.entries(deliveries)) {
      const headers = Object.fromEntries(
        Object.entries(delivery.headers).filter(
          (e): e is [string, string] =>
            typeof e[1] === 'string' && !['host', 'connection', 'content-length', 'transfer-encoding'].includes(e[0]),
        ),
      );
      for (const route of ROUTES.filter((r) => r.signed)) {
        const path = route.path
          .replace('{task_id}', String(json(delivery).task_id ?? '6f1c0b1e-8a57-4f0e-9b38-0d6c2f4c9a11'))
          .replace('{name}', 'ci')
          .replace('{server_id}', '1');
        const res = await request(
          `${runtime.url}${path}`,
          route.method === 'POST'
            ? { method: 'POST', headers, body: delivery.body }
            : { method: route.method, headers },
        );
        answers.push({ kind, route: route.id, status: res.status, error: res.json?.error });
      }
    }

    // Assess
    expect(answers.length).toBe(Object.keys(deliveries).length * ROUTES.filter((r) => r.signed).length);
    expect(answers.filter((a) => a.status !== 401)).toEqual([]);
    expect(new Set(answers.map((a) => a.error))).toEqual(new Set(['Missing signature']));
    expect(await taskCount()).toBe(tasksBefore);
    expect(runtime.simulator?.control.orders().length).toBe(ordersBefore);
  }, 120_000);
});
