/**
 * The job queue: an SQS queue with a dead-letter queue feeding the job worker (cancel-order, status,
 * price-alert) with partial batch failures. Queue settings come from lib/relay-resources.ts, which
 * the local runtime (fauxqs) uses too. The DLQ alarm belongs to the monitoring construct.
 */
import { Duration } from 'aws-cdk-lib';
import type * as dynamodb from 'aws-cdk-lib/aws-dynamodb';
import type * as lambda from 'aws-cdk-lib/aws-lambda';
import * as sources from 'aws-cdk-lib/aws-lambda-event-sources';
import type * as logs from 'aws-cdk-lib/aws-logs';
import * as sqs from 'aws-cdk-lib/aws-sqs';
import type * as sfn from 'aws-cdk-lib/aws-stepfunctions';
import { Construct } from 'constructs';
import { DEAD_LETTER_QUEUE, JOB_QUEUE, WORKER_TIMEOUT_SECONDS } from '../../contract/resources';
import { JOB_WORKER_ENTRY } from '../../contract/routes';
import { RelayFunction } from './relay-function';
import type { RelaySecrets } from './relay-secrets';
import { grantItemAccess } from './relay-table';

export interface JobQueueProps {
  readonly table: dynamodb.ITable;
  readonly secrets: RelaySecrets;
  /** Base environment of relay functions (config values, secret ARNs, TABLE_NAME). */
  readonly environment: Readonly<Record<string, string>>;
  /** The create-order workflow a matched price alert starts. */
  readonly stateMachine: sfn.IStateMachine;
  /** @default logs.RetentionDays.ONE_MONTH */
  readonly logRetention?: logs.RetentionDays;
  /**
   * Concurrent worker invocations. Small on purpose: every job calls the marketplace, paced at
   * 1 request/s per API key. 2 is the minimum SQS event sources accept.
   * @default 2
   */
  readonly maxConcurrency?: number;
}

/** Secrets the worker reads: the marketplace key, the callback signing key and the chat URLs. */
const WORKER_SECRETS = ['apiKey', 'webhook', 'chat'] as const;
const WORKER_SECRET_ARN_VARS = ['MARKETPLACE_API_KEY_ARN', 'WEBHOOK_SECRET_ARN', 'CHAT_WEBHOOKS_SECRET_ARN'] as const;
const ALL_SECRET_ARN_VARS = [...WORKER_SECRET_ARN_VARS, 'SLACK_SIGNING_SECRET_ARN'];

/** SQS queue + DLQ + worker Lambda with a bounded, partial-batch event source. */
export class JobQueue extends Construct {
  public readonly queue: sqs.Queue;
  public readonly deadLetterQueue: sqs.Queue;
  public readonly worker: lambda.IFunction;

  public constructor(scope: Construct, id: string, props: JobQueueProps) {
    super(scope, id);
    const maxConcurrency = props.maxConcurrency ?? 2;
    if (!Number.isInteger(maxConcurrency) || maxConcurrency < 2 || maxConcurrency > 1000) {
      throw new Error(`JobQueue: maxConcurrency must be an integer from 2 to 1000 (SQS event source limits); got ${maxConcurrency}`);
    }
    // Lambda's guidance for SQS sources: a message must not reappear while a worker may still run it.
    if (JOB_QUEUE.visibilityTimeoutSeconds < 6 * WORKER_TIMEOUT_SECONDS) {
      throw new Error(`JobQueue: the visibility timeout (${JOB_QUEUE.visibilityTimeoutSeconds} s) must be at least 6 x the worker timeout (${WORKER_TIMEOUT_SECONDS} s)`);
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

    // The worker sees only the ARNs of the secrets it may read.
    const baseEnvironment = Object.fromEntries(Object.entries(props.environment).filter(([key]) => !ALL_SECRET_ARN_VARS.includes(key)));
    const secretArns = props.secrets.environment();
    const relayFn = new RelayFunction(this, 'Worker', {
      entry: JOB_WORKER_ENTRY,
      description: 'GPU relay: job worker (cancel-order, status, price-alert)',
      // The hard limit (600 s); the soft limit (300 s) is the job's own deadline.
      timeout: Duration.seconds(WORKER_TIMEOUT_SECONDS),
      logRetention: props.logRetention,
      environment: {
        ...baseEnvironment,
        ...Object.fromEntries(WORKER_SECRET_ARN_VARS.map((name) => [name, secretArns[name]])),
        TABLE_NAME: props.table.tableName,
        JOB_QUEUE_URL: this.queue.queueUrl,
        STATE_MACHINE_ARN: props.stateMachine.stateMachineArn,
      },
    });
    const fn = relayFn.fn;
    this.worker = fn;

    fn.addEventSource(new sources.SqsEventSource(this.queue, {
      // One job per invocation: each gets its full 300 s soft limit inside the 600 s function timeout,
      // and a slow job never holds other jobs back.
      batchSize: 1,
      reportBatchItemFailures: true,
      maxConcurrency,
    }));
    // The event source grants consume (Receive, Delete, ChangeMessageVisibility, GetQueueAttributes);
    // the retry delay is set with ChangeMessageVisibility, so grant it explicitly as well.
    this.queue.grant(fn, 'sqs:ChangeMessageVisibility');
    grantItemAccess(props.table, fn);
    props.stateMachine.grantStartExecution(fn);
    props.secrets.grantRead(fn, WORKER_SECRETS);
  }
}
