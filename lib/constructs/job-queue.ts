/**
 * The job queue: an SQS queue with a dead-letter queue feeding the job worker (cancel-order, status,
 * price-alert) with partial batch failures. Queue settings come from contract/resources.ts, which
 * the local runtime (fauxqs) uses too. The DLQ alarm belongs to the monitoring construct.
 */
import { Duration } from 'aws-cdk-lib';
import type * as lambda from 'aws-cdk-lib/aws-lambda';
import * as sources from 'aws-cdk-lib/aws-lambda-event-sources';
import * as sqs from 'aws-cdk-lib/aws-sqs';
import { Construct } from 'constructs';
import { DEAD_LETTER_QUEUE, JOB_QUEUE, WORKER_TIMEOUT_SECONDS } from '../../contract/resources';

export interface JobQueueProps {
  /**
   * The worker that consumes the queue (its timeout at most WORKER_TIMEOUT_SECONDS, which the visibility timeout covers).
   * The queue gives it JOB_QUEUE_URL, the event source and ChangeMessageVisibility; every other grant is the caller's.
   */
  readonly consumer: lambda.Function;
  /**
   * Concurrent worker invocations. Small on purpose: every job calls the marketplace, paced at
   * 1 request/s per API key. 2 is the minimum SQS event sources accept.
   * @default 2
   */
  readonly maxConcurrency?: number;
}

/** SQS queue + DLQ feeding the given worker Lambda through a bounded, partial-batch event source. */
export class JobQueue extends Construct {
  public readonly queue: sqs.Queue;
  public readonly deadLetterQueue: sqs.Queue;
  public readonly worker: lambda.IFunction;

  public constructor(scope: Construct, id: string, props: JobQueueProps) {
    super(scope, id);
    const maxConcurrency = props.maxConcurrency ?? 2;
    if (!Number.isInteger(maxConcurrency) || maxConcurrency < 2 || maxConcurrency > 1000) {
      throw new Error(
        `JobQueue: maxConcurrency must be an integer from 2 to 1000 (SQS event source limits); got ${maxConcurrency}`,
      );
    }
    // Lambda's guidance for SQS sources: a message must not reappear while a worker may still run it.
    if (JOB_QUEUE.visibilityTimeoutSeconds < 6 * WORKER_TIMEOUT_SECONDS) {
      throw new Error(
        `JobQueue: the visibility timeout (${JOB_QUEUE.visibilityTimeoutSeconds} s) must be at least 6 x the worker timeout (${WORKER_TIMEOUT_SECONDS} s)`,
      );
    }
    const consumerTimeout = props.consumer.timeout?.toSeconds();
    if (consumerTimeout !== undefined && consumerTimeout > WORKER_TIMEOUT_SECONDS) {
      throw new Error(
        `JobQueue: the consumer's timeout (${consumerTimeout} s) exceeds the worker timeout the queue is sized for (${WORKER_TIMEOUT_SECONDS} s)`,
      );
    }

    this.deadLetterQueue = new sqs.Queue(this, 'DeadLetterQueue', {
      retentionPeriod: Duration.seconds(DEAD_LETTER_QUEUE.retentionSeconds),
      encryption: sqs.QueueEncryption.SQS_MANAGED,
      enforceSSL: true,
    });
    this.queue = new sqs.Queue(this, 'Queue', {
      visibilityTimeout: Duration.seconds(JOB_QUEUE.visibilityTimeoutSeconds),
      retentionPeriod: Duration.seconds(JOB_QUEUE.retentionSeconds),
      deadLetterQueue: { queue: this.deadLetterQueue, maxReceiveCount: JOB_QUEUE.maxReceiveCount },
      encryption: sqs.QueueEncryption.SQS_MANAGED,
      enforceSSL: true,
    });

    const fn = props.consumer;
    this.worker = fn;
    fn.addEnvironment('JOB_QUEUE_URL', this.queue.queueUrl);

    fn.addEventSource(
      new sources.SqsEventSource(this.queue, {
        // One job per invocation: each gets its full 300 s soft limit inside the 600 s function timeout,
        // and a slow job never holds other jobs back.
        batchSize: 1,
        reportBatchItemFailures: true,
        maxConcurrency,
      }),
    );
    // The event source grants consume (Receive, Delete, ChangeMessageVisibility, GetQueueAttributes);
    // the retry delay is set with ChangeMessageVisibility, so grant it explicitly as well.
    this.queue.grant(fn, 'sqs:ChangeMessageVisibility');
  }
}
