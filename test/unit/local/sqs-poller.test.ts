import { GetQueueAttributesCommand, ReceiveMessageCommand, SendMessageCommand, SQSClient } from '@aws-sdk/client-sqs';
import type { SQSEvent, SQSRecord } from 'aws-lambda';
import { startLocalSqs, type LocalSqs } from '../../../local/fauxqs';
import { queueArnFromUrl, startSqsPoller, succeededIds, toSqsRecord, type SqsPoller } from '../../../local/sqs-poller';
import { createJobWorkerHandler } from '../../../lambdas/handlers/worker/job-worker';
import { SqsMessageVisibility } from '../../../lambdas/handlers/worker/sqs-message-visibility';
import { JOB_QUEUE } from '../../../contract/resources';
import { anOrder } from '../../fakes/builders';
import { jobFakes } from '../../fakes/deps';

/** Resolves once `check` holds; fails the test (not a timing assertion) if it never does. */
const waitFor = async (check: () => boolean | Promise<boolean>, what: string, limitMs = 15_000): Promise<void> => {
  const until = Date.now() + limitMs;
  while (!(await check())) {
    if (Date.now() > until) throw new Error(`gave up waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 20));
  }
};

const statusJob = (taskId: string) =>
  JSON.stringify({ task_id: taskId, kind: 'status', input: {}, origin: { source: 'webhook' } });

describe('Function: startSqsPoller (against fauxqs, with the real worker handler)', () => {
  let sqs: LocalSqs;
  let client: SQSClient;
  let poller: SqsPoller | undefined;

  const counts = async (queueUrl: string) => {
    const { Attributes } = await client.send(
      new GetQueueAttributesCommand({
        QueueUrl: queueUrl,
        AttributeNames: ['ApproximateNumberOfMessages', 'ApproximateNumberOfMessagesNotVisible'],
      }),
    );
    return (
      Number(Attributes?.ApproximateNumberOfMessages ?? 0) +
      Number(Attributes?.ApproximateNumberOfMessagesNotVisible ?? 0)
    );
  };

  const startWorker = () => {
    const fakes = jobFakes();
    const seen: { receiveCount: string; messageId: string }[] = [];
    const worker = createJobWorkerHandler({
      ...fakes.deps,
      visibility: new SqsMessageVisibility(client, sqs.queueUrl),
      retryBaseMs: 1,
    });
    poller = startSqsPoller({
      client,
      queueUrl: sqs.queueUrl,
      waitTimeSeconds: 1,
      onError: () => undefined,
      handler: async (event: SQSEvent, context) => {
        for (const r of event.Records)
          seen.push({ receiveCount: r.attributes.ApproximateReceiveCount, messageId: r.messageId });
        return worker(event, context);
      },
    });
    return { ...fakes, seen };
  };

  beforeEach(async () => {
    // The queue's own visibility timeout is long: a message that comes back early does so only
    // because the handler's ChangeMessageVisibility moved it.
    sqs = await startLocalSqs({ visibilityTimeoutSeconds: 60 });
    client = new SQSClient({
      endpoint: sqs.endpoint,
      region: 'us-east-1',
      credentials: { accessKeyId: 'local', secretAccessKey: 'local' },
    });
  });

  afterEach(async () => {
    await poller?.stop();
    poller = undefined;
    client.destroy();
    await sqs.close();
  });

  it('moves a poison message to the DLQ after maxReceiveCount receives', async () => {
    // Prepare
    const { seen, tasks } = startWorker();
    // Act
    const sent = await client.send(
      new SendMessageCommand({ QueueUrl: sqs.queueUrl, MessageBody: '{"task_id": "t-poison", "kind": "nonsense"}' }),
    );
    await waitFor(async () => (await counts(sqs.dlqUrl)) === 1, 'the DLQ to receive the message');
    // Assess
    expect(seen.map((s) => s.receiveCount)).toEqual(
      Array.from({ length: JOB_QUEUE.maxReceiveCount }, (_, i) => String(i + 1)),
    );
    expect(new Set(seen.map((s) => s.messageId))).toEqual(new Set([sent.MessageId]));
    expect(await counts(sqs.queueUrl)).toBe(0);
    const dead = await client.send(new ReceiveMessageCommand({ QueueUrl: sqs.dlqUrl }));
    expect(dead.Messages?.[0]?.Body).toBe('{"task_id": "t-poison", "kind": "nonsense"}');
    expect(tasks.finishes).toEqual([]);
  });

  it('deletes a handled message and retries a failed one after the delay the handler set', async () => {
    // Prepare
    const { seen, tasks, marketplace } = startWorker();
    tasks.seed('t-ok', { kind: 'status' });
    marketplace.orders = [anOrder(5, { status: 'running', connection: { ssh: 'ssh root@h' } })];
    marketplace.failures.push(new Error('marketplace hiccup'));
    // Act
    await client.send(new SendMessageCommand({ QueueUrl: sqs.queueUrl, MessageBody: statusJob('t-ok') }));
    await waitFor(() => tasks.finishes.length === 1, 'the job to finish');
    await waitFor(async () => (await counts(sqs.queueUrl)) === 0, 'the message to be deleted');
    // Assess
    expect(seen.map((s) => s.receiveCount)).toEqual(['1', '2']);
    expect(tasks.finishes[0]).toMatchObject({
      taskId: 't-ok',
      state: 'succeeded',
      result: { total_orders: 1, active: 1 },
    });
    expect(await counts(sqs.dlqUrl)).toBe(0);
  });

  it("serves clients that send to the queue URL host, as the handlers' env-configured clients do", async () => {
    // Prepare: no endpoint, so the SDK uses the host of the QueueUrl (sqs.<region>.localhost:<port>)
    const urlClient = new SQSClient({
      region: 'us-east-1',
      credentials: { accessKeyId: 'local', secretAccessKey: 'local' },
      logger: { debug: () => undefined, info: () => undefined, warn: () => undefined, error: () => undefined },
    });
    try {
      // Act
      await urlClient.send(new SendMessageCommand({ QueueUrl: sqs.queueUrl, MessageBody: 'hello' }));
      // Assess
      expect(await counts(sqs.queueUrl)).toBe(1);
    } finally {
      urlClient.destroy();
    }
  });

  it('stops promptly while long-polling an empty queue', async () => {
    startWorker();
    await new Promise((r) => setTimeout(r, 50));
    await expect(poller?.stop()).resolves.toBeUndefined();
  });
});

describe('Function: succeededIds', () => {
  const records = ['a', 'b', 'c'].map((id) => ({ messageId: id }) as SQSRecord);

  it('deletes all records on an empty or void response and all but the failed ones otherwise', () => {
    expect(succeededIds(records, undefined)).toEqual(['a', 'b', 'c']);
    expect(succeededIds(records, { batchItemFailures: [] })).toEqual(['a', 'b', 'c']);
    expect(succeededIds(records, { batchItemFailures: [{ itemIdentifier: 'b' }] })).toEqual(['a', 'c']);
  });

  it('keeps the whole batch when a failure names an unknown or missing id, as Lambda does', () => {
    expect(succeededIds(records, { batchItemFailures: [{ itemIdentifier: 'zzz' }] })).toEqual([]);
    expect(succeededIds(records, { batchItemFailures: [{ itemIdentifier: '' }] })).toEqual([]);
  });
});

describe('Function: toSqsRecord', () => {
  it('builds the Lambda record shape from a received message', () => {
    const arn = queueArnFromUrl('http://sqs.us-east-1.localhost:4566/000000000000/jobs', 'us-east-1');
    const record = toSqsRecord(
      {
        MessageId: 'id-1',
        ReceiptHandle: 'rh',
        Body: '{}',
        MD5OfBody: 'md5',
        Attributes: { ApproximateReceiveCount: '3', SentTimestamp: '1' },
        MessageAttributes: { kind: { DataType: 'String', StringValue: 'status' } },
      },
      arn,
      'us-east-1',
    );
    expect(record).toEqual({
      messageId: 'id-1',
      receiptHandle: 'rh',
      body: '{}',
      md5OfBody: 'md5',
      attributes: { ApproximateReceiveCount: '3', SentTimestamp: '1' },
      messageAttributes: {
        kind: { dataType: 'String', stringValue: 'status', stringListValues: [], binaryListValues: [] },
      },
      eventSource: 'aws:sqs',
      eventSourceARN: 'arn:aws:sqs:us-east-1:000000000000:jobs',
      awsRegion: 'us-east-1',
    });
  });
});
