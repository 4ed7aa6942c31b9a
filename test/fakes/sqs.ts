/** SQS event builders for the worker's tests. */
import type { SQSEvent, SQSRecord } from 'aws-lambda';

/** One SQS record as Lambda hands it to the worker; `body` is sent as-is when a string, else as JSON. */
export const anSqsRecord = (body: unknown, messageId: string, receiveCount = 1): SQSRecord => ({
  messageId,
  receiptHandle: `rh-${messageId}`,
  body: typeof body === 'string' ? body : JSON.stringify(body),
  attributes: {
    ApproximateReceiveCount: String(receiveCount),
    SentTimestamp: '1700000000000',
    SenderId: 'AIDA',
    ApproximateFirstReceiveTimestamp: '1700000000001',
  },
  messageAttributes: {},
  md5OfBody: 'x',
  eventSource: 'aws:sqs',
  eventSourceARN: 'arn:aws:sqs:us-east-1:000000000000:jobs',
  awsRegion: 'us-east-1',
});

export const anSqsEvent = (...records: SQSRecord[]): SQSEvent => ({ Records: records });
