/** The worker's partial batch response (Powertools BatchProcessor): which records come back, and in what order they run. */
import type { SQSRecord } from 'aws-lambda';
import { createJobWorkerHandler } from '../../../../lambdas/handlers/worker/job-worker';
import { MarketplaceUnavailableError } from '../../../../lambdas/domain/errors';
import { jobFakes } from '../../../fakes/deps';
import { FakeVisibility } from '../../../fakes/message-visibility';
import { anSqsEvent, anSqsRecord } from '../../../fakes/sqs';

const record = (body: unknown, messageId: string, receiveCount = 1): SQSRecord =>
  anSqsRecord(body, messageId, receiveCount);
const event = anSqsEvent;

const cancelJob = (taskId: string, orderId: number) => ({
  task_id: taskId,
  kind: 'cancel-order',
  input: { order_id: orderId },
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

describe('Function: createJobWorkerHandler (batch response)', () => {
  afterEach(() => {
    jest.restoreAllMocks();
  });

  it('reports exactly the retryable failure and the poison message of a mixed batch', async () => {
    // Prepare
    const { worker, tasks, marketplace, visibility } = setup();
    tasks.seed('ok', { kind: 'cancel-order' });
    tasks.seed('retry', { kind: 'cancel-order' });
    const cancel = marketplace.cancelOrder.bind(marketplace);
    jest.spyOn(marketplace, 'cancelOrder').mockImplementation(async (orderId: number) => {
      if (orderId === 2) throw new MarketplaceUnavailableError('status 503');
      return cancel(orderId);
    });
    // Act
    const response = await worker(
      event(
        record(cancelJob('ok', 1), 'm-ok'),
        record(cancelJob('retry', 2), 'm-retry', 2),
        record('{"task_id": ', 'm-poison'),
      ),
    );
    // Assess
    expect(response).toEqual({ batchItemFailures: [{ itemIdentifier: 'm-retry' }, { itemIdentifier: 'm-poison' }] });
    expect(tasks.finishes.map((f) => f.taskId)).toEqual(['ok']);
    expect(visibility.changes).toEqual([
      { receiptHandle: 'rh-m-retry', seconds: 4 },
      { receiptHandle: 'rh-m-poison', seconds: 2 },
    ]);
  });

  it('reports every record of a fully failed batch instead of throwing', async () => {
    // Prepare
    const { worker, tasks, marketplace, visibility } = setup();
    tasks.seed('r1', { kind: 'cancel-order' });
    marketplace.failures.push(new MarketplaceUnavailableError('status 503'));
    // Act
    const response = worker(event(record(cancelJob('r1', 1), 'm-1'), record({ task_id: 'p', kind: 'nope' }, 'm-2')));
    // Assess
    await expect(response).resolves.toEqual({
      batchItemFailures: [{ itemIdentifier: 'm-1' }, { itemIdentifier: 'm-2' }],
    });
    expect(visibility.changes.map((c) => c.receiptHandle)).toEqual(['rh-m-1', 'rh-m-2']);
    expect(tasks.finishes).toEqual([]);
  });

  it('reports a record whose job threw something other than an Error', async () => {
    // Prepare
    const { worker, tasks, marketplace } = setup();
    tasks.seed('odd', { kind: 'cancel-order' });
    jest.spyOn(marketplace, 'cancelOrder').mockImplementation(async () => {
      throw null;
    });
    // Act
    const response = await worker(event(record(cancelJob('odd', 1), 'm-odd')));
    // Assess
    expect(response).toEqual({ batchItemFailures: [{ itemIdentifier: 'm-odd' }] });
  });

  it('runs the records one at a time, in order', async () => {
    // Prepare
    const { worker, tasks, marketplace } = setup();
    const trail: string[] = [];
    for (const id of ['a', 'b', 'c']) tasks.seed(id, { kind: 'cancel-order' });
    jest.spyOn(marketplace, 'cancelOrder').mockImplementation(async (orderId: number) => {
      trail.push(`start ${orderId}`);
      // The first record is the slowest: run in parallel, the others would start before it ends.
      await new Promise((resolve) => setTimeout(resolve, orderId === 1 ? 30 : 1));
      trail.push(`end ${orderId}`);
    });
    // Act
    const response = await worker(
      event(record(cancelJob('a', 1), 'ma'), record(cancelJob('b', 2), 'mb'), record(cancelJob('c', 3), 'mc')),
    );
    // Assess
    expect(response).toEqual({ batchItemFailures: [] });
    expect(trail).toEqual(['start 1', 'end 1', 'start 2', 'end 2', 'start 3', 'end 3']);
  });

  it('returns a fresh response object for each batch', async () => {
    // Prepare
    const { worker } = setup();
    // Act
    const first = await worker(event());
    const second = await worker(event());
    // Assess
    expect(first).toEqual({ batchItemFailures: [] });
    expect(first.batchItemFailures).not.toBe(second.batchItemFailures);
  });
});
