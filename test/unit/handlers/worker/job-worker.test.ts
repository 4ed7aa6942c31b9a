import type { SQSRecord } from 'aws-lambda';
import {
  createJobWorkerHandler,
  parseJobMessage,
  receiveCountOf,
} from '../../../../lambdas/handlers/worker/job-worker';
import { MarketplaceInvalidInputError, MarketplaceUnavailableError } from '../../../../lambdas/domain/errors';
import { logger } from '../../../../lambdas/adapters/observability';
import { jobFakes } from '../../../fakes/deps';
import { FakeVisibility } from '../../../fakes/message-visibility';
import { anOrder } from '../../../fakes/builders';
import { anSqsEvent, anSqsRecord } from '../../../fakes/sqs';

const record = (body: unknown, receiveCount: number, messageId = `m-${receiveCount}`): SQSRecord =>
  anSqsRecord(body, messageId, receiveCount);
const event = anSqsEvent;

const cancelJob = (taskId: string, orderId = 77) => ({
  task_id: taskId,
  kind: 'cancel-order',
  input: { order_id: orderId, callback_url: 'https://cb.example/t' },
  origin: { source: 'webhook' },
});

const setup = () => {
  const fakes = jobFakes();
  const visibility = new FakeVisibility();
  const worker = createJobWorkerHandler({
    ...fakes.deps,
    visibility,
    now: () => 1_740_000_000_000,
    retryBaseMs: 1_000,
  });
  return { ...fakes, visibility, worker };
};

describe('Function: createJobWorkerHandler', () => {
  afterEach(() => {
    jest.useRealTimers();
    jest.restoreAllMocks();
  });

  it('runs a job, marks the task running, records and delivers the result and deletes the message', async () => {
    // Prepare
    const { worker, tasks, notifier, marketplace, visibility } = setup();
    tasks.seed('t-1', { kind: 'cancel-order' });
    // Act
    const response = await worker(event(record(cancelJob('t-1'), 1)));
    // Assess
    expect(response).toEqual({ batchItemFailures: [] });
    expect(tasks.updates).toEqual([{ taskId: 't-1', state: 'running' }]);
    expect(marketplace.cancelled).toEqual([77]);
    expect(tasks.finishes).toEqual([
      { taskId: 't-1', state: 'succeeded', result: { success: true, order_id: 77, status: 'cancelled' } },
    ]);
    expect(notifier.callbacks).toEqual([
      { url: 'https://cb.example/t', taskId: 't-1', result: { success: true, order_id: 77, status: 'cancelled' } },
    ]);
    expect(visibility.changes).toEqual([]);
  });

  it.each([
    [1, 2],
    [2, 4],
    [3, 8],
  ])(
    'on a failure at receive %i delays the message %i s and reports it failed, without a result',
    async (receiveCount, seconds) => {
      // Prepare
      const { worker, tasks, notifier, marketplace, visibility } = setup();
      tasks.seed('t-2', { kind: 'cancel-order' });
      marketplace.failures.push(new MarketplaceUnavailableError('status 503'));
      // Act
      const response = await worker(event(record(cancelJob('t-2'), receiveCount, 'msg-2')));
      // Assess
      expect(response).toEqual({ batchItemFailures: [{ itemIdentifier: 'msg-2' }] });
      expect(visibility.changes).toEqual([{ receiptHandle: 'rh-msg-2', seconds }]);
      expect(tasks.finishes).toEqual([]);
      expect(notifier.callbacks).toEqual([]);
    },
  );

  it('on a failure at receive 4 sends the failure result and deletes the message', async () => {
    // Prepare
    const { worker, tasks, notifier, marketplace, visibility } = setup();
    tasks.seed('t-3', { kind: 'cancel-order' });
    marketplace.failures.push(new MarketplaceUnavailableError('status 503'));
    // Act
    const response = await worker(event(record(cancelJob('t-3'), 4)));
    // Assess
    expect(response).toEqual({ batchItemFailures: [] });
    expect(visibility.changes).toEqual([]);
    expect(tasks.finishes).toEqual([
      { taskId: 't-3', state: 'failed', result: { success: false, error: 'status 503' } },
    ]);
    expect(notifier.callbacks).toEqual([
      { url: 'https://cb.example/t', taskId: 't-3', result: { success: false, error: 'status 503' } },
    ]);
  });

  it('reports only the failed records of a batch', async () => {
    // Prepare
    const { worker, tasks, marketplace } = setup();
    for (const id of ['a', 'b', 'c']) tasks.seed(id, { kind: 'cancel-order' });
    // The second cancel (record b) meets the failure.
    const cancel = marketplace.cancelOrder.bind(marketplace);
    jest.spyOn(marketplace, 'cancelOrder').mockImplementation(async (orderId: number) => {
      if (orderId === 2) throw new MarketplaceUnavailableError('status 502');
      return cancel(orderId);
    });
    // Act
    const response = await worker(
      event(record(cancelJob('a', 1), 1, 'ra'), record(cancelJob('b', 2), 1, 'rb'), record(cancelJob('c', 3), 2, 'rc')),
    );
    // Assess
    expect(response).toEqual({ batchItemFailures: [{ itemIdentifier: 'rb' }] });
    expect(tasks.finishes.map((f) => f.taskId)).toEqual(['a', 'c']);
  });

  it.each([
    ['not JSON', '{"task_id": '],
    ['an unknown kind', { task_id: 't', kind: 'create-order', input: {}, origin: { source: 'webhook' } }],
    [
      'a cancel without order_id',
      {
        task_id: 't',
        kind: 'cancel-order',
        input: { callback_url: 'https://cb.example/?token=s3cr3t-token' },
        origin: { source: 'webhook' },
      },
    ],
  ])('fails a poison message (%s) on every receive, logging no content', async (_name, body) => {
    // Prepare
    const { worker, tasks, visibility } = setup();
    const errors = jest.spyOn(logger, 'error');
    // Act: receive 5 is the last one before SQS redrives to the DLQ
    const responses = [await worker(event(record(body, 1, 'p1'))), await worker(event(record(body, 5, 'p5')))];
    // Assess
    expect(responses).toEqual([
      { batchItemFailures: [{ itemIdentifier: 'p1' }] },
      { batchItemFailures: [{ itemIdentifier: 'p5' }] },
    ]);
    expect(tasks.finishes).toEqual([]);
    expect(visibility.changes.map((c) => c.receiptHandle)).toEqual(['rh-p1', 'rh-p5']);
    expect(errors).toHaveBeenCalledWith(
      'poison job message',
      expect.objectContaining({ messageId: 'p1', receiveCount: 1 }),
    );
    expect(JSON.stringify(errors.mock.calls)).not.toContain('s3cr3t-token');
  });

  it('ends a job that passes its soft limit with the soft-limit failure, without retrying', async () => {
    // Prepare
    jest.useFakeTimers({ doNotFake: ['nextTick', 'setImmediate'] });
    const { worker, tasks, marketplace, visibility } = setup();
    tasks.seed('t-slow', { kind: 'status' });
    marketplace.hang = new Promise<never>(() => undefined);
    // Act
    const pending = worker(
      event(record({ task_id: 't-slow', kind: 'status', input: {}, origin: { source: 'webhook' } }, 1)),
    );
    await jest.advanceTimersByTimeAsync(300_000);
    const response = await pending;
    // Assess
    expect(response).toEqual({ batchItemFailures: [] });
    expect(visibility.changes).toEqual([]);
    expect(tasks.finishes).toEqual([
      {
        taskId: 't-slow',
        state: 'failed',
        result: { success: false, error: 'Task exceeded its soft time limit of 300 s' },
      },
    ]);
  });

  it('during a cancel job (crash point, AWS): the worker dies after cancel_order was sent; the message, delivered again after its visibility timeout, ends the task with one result', async () => {
    // Prepare: the first cancel_order cancels the order and its invocation never answers (the
    // function timed out or died there: nothing after this point runs, the message is not deleted)
    const { worker, tasks, notifier, marketplace, visibility } = setup();
    tasks.seed('t-crash', { kind: 'cancel-order' });
    let reached!: () => void;
    const crashed = new Promise<void>((resolve) => (reached = resolve));
    const cancel = marketplace.cancelOrder.bind(marketplace);
    marketplace.cancelOrder = async (orderId) => {
      await cancel(orderId);
      // What the marketplace answers from now on: the order has ended, cancelling it again is invalid input.
      marketplace.cancelOrder = async () => {
        marketplace.cancelCalls.push(orderId);
        throw new MarketplaceInvalidInputError();
      };
      marketplace.orders = [anOrder(orderId, { status: 'expired' })];
      reached();
      return new Promise<never>(() => undefined);
    };
    void worker(event(record(cancelJob('t-crash'), 1, 'msg-crash')));
    await crashed;
    expect(tasks.finishes).toEqual([]);
    // Act: SQS delivers the same message again (its receive count 2)
    const response = await worker(event(record(cancelJob('t-crash'), 2, 'msg-crash')));
    // Assess: one result, a success (the order was cancelled), and the message done
    expect(response).toEqual({ batchItemFailures: [] });
    expect(marketplace.cancelCalls).toEqual([77, 77]);
    expect(tasks.finishes).toEqual([
      { taskId: 't-crash', state: 'succeeded', result: { success: true, order_id: 77, status: 'cancelled' } },
    ]);
    expect(notifier.callbacks).toHaveLength(1);
    expect(visibility.changes).toEqual([]);
  });

  it('drops a redelivered job whose task already finished, without running it again', async () => {
    // Prepare
    const { worker, tasks, marketplace } = setup();
    tasks.seed('t-done', { kind: 'cancel-order' });
    await tasks.finish('t-done', 'succeeded', { success: true, order_id: 77, status: 'cancelled' }, 0);
    // Act
    const response = await worker(event(record(cancelJob('t-done'), 2)));
    // Assess
    expect(response).toEqual({ batchItemFailures: [] });
    expect(marketplace.cancelled).toEqual([]);
  });

  it('still reports the record failed when the retry delay cannot be set', async () => {
    // Prepare
    const { worker, tasks, marketplace, visibility } = setup();
    tasks.seed('t-v', { kind: 'status' });
    marketplace.failures.push(new Error('boom'));
    jest.spyOn(visibility, 'change').mockRejectedValue(new Error('sqs down'));
    // Act
    const response = await worker(
      event(record({ task_id: 't-v', kind: 'status', input: {}, origin: { source: 'webhook' } }, 1, 'mv')),
    );
    // Assess
    expect(response).toEqual({ batchItemFailures: [{ itemIdentifier: 'mv' }] });
  });
});

describe('Function: parseJobMessage', () => {
  it('accepts each job kind and names only the failing paths of a bad one', () => {
    expect(
      parseJobMessage(
        JSON.stringify({
          task_id: 'x',
          kind: 'price-alert',
          input: { gpu_type: '4090', target_price: 0.4, image: 'i' },
          origin: { source: 'slack' },
        }),
      ).kind,
    ).toBe('price-alert');
    expect(() =>
      parseJobMessage(
        JSON.stringify({
          task_id: 'x',
          kind: 'cancel-order',
          input: { order_id: 'secret-value' },
          origin: { source: 'webhook' },
        }),
      ),
    ).toThrow(/input\.order_id/);
    expect(() =>
      parseJobMessage(
        JSON.stringify({
          task_id: 'x',
          kind: 'cancel-order',
          input: { order_id: 'secret-value' },
          origin: { source: 'webhook' },
        }),
      ),
    ).not.toThrow(/secret-value/);
  });

  it('reads the receive count, defaulting to a first delivery', () => {
    expect(receiveCountOf(record('{}', 3))).toBe(3);
    expect(receiveCountOf({ ...record('{}', 1), attributes: {} as SQSRecord['attributes'] })).toBe(1);
  });
});
