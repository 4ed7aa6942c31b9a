/**
 * Fault injection on the queued jobs (cancel-order, status) end to end: the local runtime (API
 * handlers, fauxqs job queue + DLQ, the SQS poller feeding the unchanged worker handler, dynalite,
 * the marketplace simulator over HTTP) with faults injected into the simulator and the receivers.
 *
 * For every fault: the accepted job ends with exactly one result (a final task record and one
 * callback delivery), jobs place no orders, and no SQS message is lost (at the end the queue is
 * empty, and the DLQ holds exactly the poison messages this file sent).
 */
import { GetQueueAttributesCommand, SendMessageCommand, SQSClient } from '@aws-sdk/client-sqs';
import { hmacHex } from '../../lambdas/domain/signing';
import type { Fault } from '../../local/simulator/marketplace-simulator';
import { startTestRuntime, TEST_WEBHOOK_SECRET, type LocalRuntime } from '../helpers/local-runtime';
import { request, signedPost, startReceiver, type Receiver } from '../helpers/receivers';

/** Marketplace timeout of this runtime; the slow faults exceed it. */
const MARKETPLACE_TIMEOUT_MS = 1_000;
const BEYOND_TIMEOUT_MS = 1_500;

interface Accepted {
  readonly tag: string;
  readonly taskId: string;
  /** The callback receiver was told to fail: the one delivery may be retried. */
  readonly receiverFailed: boolean;
}

describe('Faults: queued jobs (local runtime)', () => {
  let runtime: LocalRuntime;
  let callbacks: Receiver;
  let sqs: SQSClient;
  const accepted: Accepted[] = [];
  let poisonSent = 0;
  let tagCounter = 0;

  beforeAll(async () => {
    callbacks = await startReceiver();
    runtime = await startTestRuntime({ env: { MARKETPLACE_TIMEOUT_MS: String(MARKETPLACE_TIMEOUT_MS) } });
    sqs = new SQSClient({
      endpoint: runtime.sqs.endpoint,
      region: 'us-east-1',
      useQueueUrlAsEndpoint: false,
      credentials: { accessKeyId: 'local', secretAccessKey: 'local' },
    });
  });
  afterAll(async () => {
    sqs?.destroy();
    await runtime?.close();
    await callbacks?.close();
  });
  afterEach(() => {
    runtime.simulator?.control.clearFaults();
    callbacks.setBehaviour({});
  });

  const sim = () => {
    if (!runtime.simulator) throw new Error('the test runtime runs the simulator');
    return runtime.simulator;
  };

  /** Places an order straight on the simulator (as the account holder would), for the cancel jobs. */
  const placeOrderOnSimulator = async (): Promise<number> => {
    const server = sim()
      .control.servers()
      .find((s) => !s.rented && s.online !== false && s.allowed_coins.includes('NATIVE-Blockchain'));
    if (!server) throw new Error('no free server in the simulator');
    for (let attempt = 0; attempt < 20; attempt += 1) {
      const res = await request(`${sim().url}/v1/create_order`, {
        method: 'POST',
        headers: { auth: sim().apiKey, 'content-type': 'application/json' },
        body: JSON.stringify({
          renting_server: server.id,
          type: 'on-demand',
          currency: 'NATIVE-Blockchain',
          image: 'ubuntu:22.04',
        }),
      });
      if (res.json?.code === 0 && typeof res.json.order_id === 'number') return res.json.order_id;
      await new Promise((resolve) => setTimeout(resolve, 30)); // code 5: the simulator's pacing
    }
    throw new Error('could not place an order on the simulator');
  };

  /** Queues a job through the API with a callback to this file's receiver; returns its tag and task id. */
  const queueJob = async (
    path: '/webhook/cancel-order' | '/webhook/status',
    body: Record<string, unknown>,
    receiverFailed = false,
  ): Promise<Accepted> => {
    tagCounter += 1;
    const tag = `job-${tagCounter}`;
    const res = await signedPost(
      runtime.url,
      path,
      { ...body, callback_url: `${callbacks.url}/${tag}` },
      TEST_WEBHOOK_SECRET,
    );
    expect(res.status).toBe(202);
    const job = { tag, taskId: String(res.json?.task_id), receiverFailed };
    accepted.push(job);
    return job;
  };

  const taskRecord = async (taskId: string) => {
    const path = `/webhook/tasks/${taskId}`;
    const res = await request(`${runtime.url}${path}`, {
      headers: { 'x-webhook-signature': hmacHex(TEST_WEBHOOK_SECRET, path) },
    });
    expect(res.status).toBe(200);
    return res.json as { state: string; result?: Record<string, unknown> };
  };

  /** Waits for the job's result and checks it is the recorded one. */
  const resultOf = async (job: Accepted) => {
    const delivery = await callbacks.waitFor((r) => r.path === `/${job.tag}`, 30_000);
    const record = await taskRecord(job.taskId);
    expect(['succeeded', 'failed']).toContain(record.state);
    expect(delivery.json).toEqual(record.result);
    return delivery.json as Record<string, unknown>;
  };

  /**
   * Attempts that reached the endpoint. Not `calls`: the simulator shares the test's event loop, so
   * on a loaded machine two well-spaced requests can be handled back to back and the second answered
   * code 5 (then retried by the client): that is arrival jitter, not an extra attempt of the job.
   */
  const callsTo = (endpoint: string) => sim().control.counters().processed[endpoint] ?? 0;

  const queueDepth = async (queueUrl: string): Promise<number> => {
    const { Attributes } = await sqs.send(
      new GetQueueAttributesCommand({
        QueueUrl: queueUrl,
        AttributeNames: [
          'ApproximateNumberOfMessages',
          'ApproximateNumberOfMessagesNotVisible',
          'ApproximateNumberOfMessagesDelayed',
        ],
      }),
    );
    return (
      Number(Attributes?.ApproximateNumberOfMessages ?? 0) +
      Number(Attributes?.ApproximateNumberOfMessagesNotVisible ?? 0) +
      Number(Attributes?.ApproximateNumberOfMessagesDelayed ?? 0)
    );
  };

  const inject = (...faults: Fault[]) => faults.forEach((f) => sim().control.inject(f));

  describe('marketplace faults on cancel-order jobs', () => {
    it('retries cancel_order through a connection drop and reports the cancellation', async () => {
      const orderId = await placeOrderOnSimulator();
      const before = callsTo('cancel_order');
      inject({ endpoint: 'cancel_order', kind: 'down', times: 2 });
      const result = await resultOf(await queueJob('/webhook/cancel-order', { order_id: orderId }));
      expect(result).toEqual({ success: true, order_id: orderId, status: 'cancelled' });
      expect(callsTo('cancel_order') - before).toBe(3);
      expect(
        sim()
          .control.orders()
          .find((o) => o.order_id === orderId),
      ).toMatchObject({ completed: true, end_reason: 'cancelled' });
    });

    it('reports one failure after the retries when cancel_order keeps answering code 1', async () => {
      const orderId = await placeOrderOnSimulator();
      const before = callsTo('cancel_order');
      inject({ endpoint: 'cancel_order', kind: 'code', code: 1, times: 10_000 });
      const result = await resultOf(await queueJob('/webhook/cancel-order', { order_id: orderId }));
      expect(result).toEqual({ success: false, error: expect.any(String) });
      // First attempt and three retries (the spec's 3), then the failure result.
      expect(callsTo('cancel_order') - before).toBe(4);
      expect(
        sim()
          .control.orders()
          .find((o) => o.order_id === orderId)?.completed,
      ).toBe(false);
    });

    it.each([
      ['times out after sending', { kind: 'timeoutAfterSend' as const }],
      ['is slower than the client timeout', { kind: 'slow' as const, delayMs: BEYOND_TIMEOUT_MS }],
    ])('reports the cancellation once when cancel_order %s (processed, answer lost)', async (_label, fault) => {
      const orderId = await placeOrderOnSimulator();
      inject({ endpoint: 'cancel_order', times: 1, ...fault });
      const result = await resultOf(await queueJob('/webhook/cancel-order', { order_id: orderId }));
      expect(
        sim()
          .control.orders()
          .find((o) => o.order_id === orderId),
      ).toMatchObject({ completed: true, end_reason: 'cancelled' });
      // The order is cancelled, so the one result must say so (not "rejected" by the retry).
      expect(result).toEqual({ success: true, order_id: orderId, status: 'cancelled' });
    });
  });

  describe('marketplace faults on status jobs', () => {
    it.each<[string, Fault[], boolean]>([
      ['malformed my_orders answers', [{ endpoint: 'my_orders', kind: 'malformed', times: 2 }], true],
      // The client backs off 0..1, 0..2, 0..4 s on code 5 (not configurable): a short storm keeps this quick.
      ['a storm of code 5', [{ endpoint: '*', kind: 'code', code: 5, times: 3 }], true],
      ['my_orders down twice', [{ endpoint: 'my_orders', kind: 'down', times: 2 }], true],
      [
        'my_orders slower than the client timeout',
        [{ endpoint: 'my_orders', kind: 'slow', delayMs: BEYOND_TIMEOUT_MS, times: 1 }],
        true,
      ],
      ['code 1 on my_orders', [{ endpoint: 'my_orders', kind: 'code', code: 1, times: 2 }], true],
      ['code 1 on my_orders for good', [{ endpoint: 'my_orders', kind: 'code', code: 1, times: 10_000 }], false],
    ])('%s: one result, no order placed', async (_label, faults, succeeds) => {
      const ordersBefore = sim().control.counters().ordersCreated;
      const callsBefore = callsTo('my_orders');
      // Shared reads are cached for the poll interval (1 s): let the cache age out so the job reads.
      await new Promise((resolve) => setTimeout(resolve, 1_100));
      inject(...faults);
      const result = await resultOf(await queueJob('/webhook/status', {}));
      if (succeeds) expect(result).toMatchObject({ total_orders: expect.any(Number), orders: expect.any(Array) });
      else expect(result).toEqual({ success: false, error: expect.any(String) });
      expect(callsTo('my_orders')).toBeGreaterThan(callsBefore);
      expect(sim().control.counters().ordersCreated).toBe(ordersBefore);
    });
  });

  describe('callback receiver faults', () => {
    it('retries the callback of a job while the receiver answers 500, with one delivery id', async () => {
      callbacks.setBehaviour({ status: 500 });
      const job = await queueJob('/webhook/status', {}, true);
      const first = await callbacks.waitFor((r) => r.path === `/${job.tag}`, 30_000);
      // The second attempt proves the retry; then the receiver recovers or the attempts run out.
      await callbacks.waitFor((r) => r.path === `/${job.tag}` && r !== first, 30_000);
      callbacks.setBehaviour({});
      const record = await (async () => {
        for (let i = 0; i < 100; i += 1) {
          const r = await taskRecord(job.taskId);
          if (r.state === 'succeeded' || r.state === 'failed') return r;
          await new Promise((resolve) => setTimeout(resolve, 100));
        }
        throw new Error('task never finished');
      })();
      expect(record.state).toBe('succeeded');
      const deliveries = callbacks.requests.filter((r) => r.path === `/${job.tag}`);
      expect(new Set(deliveries.map((d) => d.headers['webhook-id'])).size).toBe(1);
      expect(new Set(deliveries.map((d) => d.body)).size).toBe(1);
    });
  });

  describe('poison messages', () => {
    it('moves messages the worker can never process to the DLQ', async () => {
      for (const body of [
        'not json',
        JSON.stringify({ task_id: 'x', kind: 'nope', input: {}, origin: { source: 'webhook' } }),
      ]) {
        await sqs.send(new SendMessageCommand({ QueueUrl: runtime.sqs.queueUrl, MessageBody: body }));
        poisonSent += 1;
      }
      for (let i = 0; i < 200 && (await queueDepth(runtime.sqs.dlqUrl)) < poisonSent; i += 1)
        await new Promise((resolve) => setTimeout(resolve, 100));
      expect(await queueDepth(runtime.sqs.dlqUrl)).toBe(poisonSent);
    });
  });

  describe('promises over the whole run', () => {
    it('lost no message: the queue is drained, the DLQ holds only the poison, every job has one result', async () => {
      for (let i = 0; i < 200 && (await queueDepth(runtime.sqs.queueUrl)) > 0; i += 1)
        await new Promise((resolve) => setTimeout(resolve, 100));
      expect(await queueDepth(runtime.sqs.queueUrl)).toBe(0);
      expect(await queueDepth(runtime.sqs.dlqUrl)).toBe(poisonSent);
      expect(accepted.length).toBeGreaterThanOrEqual(10);
      for (const job of accepted) {
        const record = await taskRecord(job.taskId);
        expect(['succeeded', 'failed']).toContain(record.state);
        const deliveries = callbacks.requests.filter((r) => r.path === `/${job.tag}`);
        if (job.receiverFailed) expect(new Set(deliveries.map((d) => d.headers['webhook-id'])).size).toBe(1);
        else expect(deliveries).toHaveLength(1);
      }
    });
  });
});
