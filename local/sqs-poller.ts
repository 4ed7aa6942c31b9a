/**
 * The local stand-in for Lambda's SQS event source mapping: long-polls the job queue (fauxqs),
 * hands each batch to the unchanged worker handler as a real SQSEvent, deletes the records the
 * handler did not report in `batchItemFailures`, and leaves the failed ones in the queue. They
 * reappear after their visibility timeout (or the one the handler set with ChangeMessageVisibility),
 * and the queue's RedrivePolicy moves them to the DLQ, exactly as in AWS.
 */
import { randomUUID } from 'node:crypto';
import {
  DeleteMessageBatchCommand,
  ReceiveMessageCommand,
  type Message,
  type MessageAttributeValue,
  type SQSClient,
} from '@aws-sdk/client-sqs';
import type {
  Context,
  SQSBatchResponse,
  SQSEvent,
  SQSMessageAttributes,
  SQSRecord,
  SQSRecordAttributes,
} from 'aws-lambda';
import { WORKER_TIMEOUT_SECONDS } from '../contract/resources';

export interface SqsPollerOptions {
  readonly client: SQSClient;
  readonly queueUrl: string;
  /** The worker handler; a throw fails the whole batch, as with Lambda. */
  readonly handler: (event: SQSEvent, context: Context) => Promise<SQSBatchResponse | void>;
  /** Long-poll wait per ReceiveMessage. @default 2 (short, so stop() returns quickly) */
  readonly waitTimeSeconds?: number;
  /** Messages per batch (1..10). @default 10, Lambda's default for SQS */
  readonly batchSize?: number;
  /** ARN put in `eventSourceARN`. @default derived from the queue URL and the client region */
  readonly queueArn?: string;
  /** Function name in the Lambda context. @default 'local-job-worker' */
  readonly functionName?: string;
  /** Told about receive/delete/handler failures (never message bodies). @default console.error */
  readonly onError?: (message: string, error: unknown) => void;
}

export interface SqsPoller {
  /** Stops polling; resolves once the batch in progress (if any) has been handled. */
  stop(): Promise<void>;
}

/** `arn:aws:sqs:<region>:<account>:<name>` from `http(s)://host/<account>/<name>`. */
export const queueArnFromUrl = (queueUrl: string, region: string): string => {
  const [account = '000000000000', name = 'queue'] = new URL(queueUrl).pathname.split('/').filter(Boolean);
  return `arn:aws:sqs:${region}:${account}:${name}`;
};

const toLambdaAttribute = (value: MessageAttributeValue) => ({
  dataType: value.DataType ?? 'String',
  ...(value.StringValue !== undefined ? { stringValue: value.StringValue } : {}),
  ...(value.BinaryValue !== undefined ? { binaryValue: Buffer.from(value.BinaryValue).toString('base64') } : {}),
  stringListValues: value.StringListValues ?? [],
  binaryListValues: (value.BinaryListValues ?? []).map((b) => Buffer.from(b).toString('base64')),
});

/** One received message as Lambda delivers it in an SQS event. */
export const toSqsRecord = (message: Message, eventSourceARN: string, awsRegion: string): SQSRecord => ({
  messageId: message.MessageId ?? '',
  receiptHandle: message.ReceiptHandle ?? '',
  body: message.Body ?? '',
  attributes: (message.Attributes ?? {}) as unknown as SQSRecordAttributes,
  messageAttributes: Object.fromEntries(
    Object.entries(message.MessageAttributes ?? {}).map(([name, value]) => [name, toLambdaAttribute(value)]),
  ) as SQSMessageAttributes,
  md5OfBody: message.MD5OfBody ?? '',
  ...(message.MD5OfMessageAttributes ? { md5OfMessageAttributes: message.MD5OfMessageAttributes } : {}),
  eventSource: 'aws:sqs',
  eventSourceARN,
  awsRegion,
});

/**
 * The message ids to delete after a handler returned: every record unless it is listed as failed.
 * Like Lambda, a malformed response (a failure without a known itemIdentifier) fails the whole batch.
 */
export const succeededIds = (records: readonly SQSRecord[], response: SQSBatchResponse | void | unknown): string[] => {
  const failures = (response as SQSBatchResponse | undefined)?.batchItemFailures;
  if (failures === undefined || failures === null) return records.map((r) => r.messageId);
  if (!Array.isArray(failures)) return [];
  const known = new Set(records.map((r) => r.messageId));
  const failed = new Set<string>();
  for (const failure of failures) {
    const id = (failure as { itemIdentifier?: unknown } | null)?.itemIdentifier;
    if (typeof id !== 'string' || !known.has(id)) return [];
    failed.add(id);
  }
  return records.map((r) => r.messageId).filter((id) => !failed.has(id));
};

const lambdaContext = (functionName: string): Context => {
  const deadline = Date.now() + WORKER_TIMEOUT_SECONDS * 1000;
  return {
    callbackWaitsForEmptyEventLoop: false,
    functionName,
    functionVersion: '$LATEST',
    invokedFunctionArn: `arn:aws:lambda:local:000000000000:function:${functionName}`,
    memoryLimitInMB: '256',
    awsRequestId: randomUUID(),
    logGroupName: `/aws/lambda/${functionName}`,
    logStreamName: 'local',
    getRemainingTimeInMillis: () => Math.max(0, deadline - Date.now()),
    done: () => undefined,
    fail: () => undefined,
    succeed: () => undefined,
  };
};

const isAbort = (error: unknown): boolean =>
  error instanceof Error && (error.name === 'AbortError' || error.name === 'AbortController');

/** Starts polling at once; call `stop()` before closing the queue. */
export const startSqsPoller = (options: SqsPollerOptions): SqsPoller => {
  const waitTimeSeconds = options.waitTimeSeconds ?? 2;
  const batchSize = Math.min(10, Math.max(1, options.batchSize ?? 10));
  const functionName = options.functionName ?? 'local-job-worker';
  const onError =
    options.onError ??
    ((message: string, error: unknown) =>
      console.error(`[sqs-poller] ${message}`, error instanceof Error ? error.message : error));
  let stopped = false;
  let inflight: AbortController | undefined;
  let wake: (() => void) | undefined;

  const pause = (ms: number) =>
    new Promise<void>((resolve) => {
      const timer = setTimeout(resolve, ms);
      wake = () => {
        clearTimeout(timer);
        resolve();
      };
    });

  const handleBatch = async (messages: Message[], arn: string, region: string): Promise<void> => {
    const records = messages.map((m) => toSqsRecord(m, arn, region));
    let response: SQSBatchResponse | void;
    try {
      response = await options.handler({ Records: records }, lambdaContext(functionName));
    } catch (error) {
      // Lambda returns the whole batch to the queue when the function throws.
      onError('worker handler threw; the batch returns to the queue', error);
      return;
    }
    const done = new Set(succeededIds(records, response));
    const entries = records
      .filter((r) => done.has(r.messageId))
      .map((r, i) => ({ Id: String(i), ReceiptHandle: r.receiptHandle }));
    if (entries.length === 0) return;
    try {
      const result = await options.client.send(
        new DeleteMessageBatchCommand({ QueueUrl: options.queueUrl, Entries: entries }),
      );
      if (result.Failed?.length)
        onError(
          `could not delete ${result.Failed.length} handled message(s)`,
          result.Failed.map((f) => f.Code).join(', '),
        );
    } catch (error) {
      onError('could not delete handled messages; they will be received again', error);
    }
  };

  const loop = async (): Promise<void> => {
    const region = await options.client.config.region();
    const arn = options.queueArn ?? queueArnFromUrl(options.queueUrl, region);
    while (!stopped) {
      inflight = new AbortController();
      let messages: Message[];
      try {
        const received = await options.client.send(
          new ReceiveMessageCommand({
            QueueUrl: options.queueUrl,
            MaxNumberOfMessages: batchSize,
            WaitTimeSeconds: waitTimeSeconds,
            MessageSystemAttributeNames: ['All'],
            MessageAttributeNames: ['All'],
          }),
          { abortSignal: inflight.signal },
        );
        messages = received.Messages ?? [];
      } catch (error) {
        if (stopped || isAbort(error)) break;
        onError('receive failed; retrying in 500 ms', error);
        await pause(500);
        continue;
      } finally {
        inflight = undefined;
      }
      if (messages.length > 0) await handleBatch(messages, arn, region);
    }
  };

  const running = loop().catch((error) => onError('poller stopped on an unexpected error', error));

  return {
    stop: async () => {
      stopped = true;
      inflight?.abort();
      wake?.();
      await running;
    },
  };
};
