/**
 * The SQS job worker: runs cancel-order, status, price-alert, extend-order and set-spot-price jobs and reports partial batch
 * failures through Powertools' BatchProcessor (`processPartialResponse`). Records are processed one
 * after another (`processInParallel: false`): marketplace calls stay paced, and each record's retry
 * delay is set on the message itself before the record is reported failed. A batch whose every record
 * failed is reported record by record too (`throwOnFullBatchFailure: false`), never thrown: a throw
 * would return the batch to the queue with the queue's visibility timeout, not the retry delays.
 *
 * Per record (receive n = ApproximateReceiveCount):
 * - unparseable / invalid body (poison): logged without its content and failed every time, after a
 *   2^n s delay, so SQS moves it to the DLQ after maxReceiveCount receives;
 * - job succeeds: the result is recorded and delivered (completeTask), the message deleted;
 * - job fails on receive n < 4: visibility set to 2^n s (× JOB_RETRY_BASE_MS / 1000), record failed;
 * - job fails on receive 4 (after the 3rd retry) or passes its soft limit: failure result
 *   {success:false, error} recorded and delivered, message deleted.
 */
import { BatchProcessor, EventType, processPartialResponse } from '@aws-lambda-powertools/batch';
import type { Context, SQSBatchResponse, SQSEvent, SQSRecord } from 'aws-lambda';
import * as z from 'zod/mini';
import { completeTask, isSuccessResult } from '../../domain/requests/complete-task';
import { InvalidJobMessageError } from '../../domain/errors';
import { SOFT_TIME_LIMIT_SECONDS } from '../../../contract/limits';
import {
  errorText,
  isFinalAttempt,
  isRetryable,
  runJob,
  type JobDeps,
  type TypedJobMessage,
} from '../../domain/requests/jobs';
import { MAX_LEASE_HOURS } from '../../domain/leases/lease';
import { FINAL_STATES, failure, HostFilterShape, TaskOriginSchema, type TaskResult } from '../../domain/task';
import { documentClient } from '../../adapters/aws-clients';
import { DynamoDbLeaseBook } from '../../adapters/dynamodb/dynamodb-lease-book';
import { DynamoDbTaskRepository } from '../../adapters/dynamodb/dynamodb-task-repository';
import { relayEnv } from '../../adapters/env';
import { lazyWorkflowStarterFromEnv } from '../../adapters/lazy-workflow-starter';
import { marketplaceFromEnv } from '../../adapters/marketplace-from-env';
import { notifierFromEnv } from '../../adapters/notifier-from-env';
import {
  countMetric,
  logFailure,
  logger,
  MetricName,
  spendMetric,
  tagTask,
  tracedSegment,
  withInvocation,
  withTaskScope,
} from '../../adapters/observability';
import { budgetedHandler } from '../../adapters/invocation-budget';
import { lazy } from '../../adapters/lazy';
import { withSoftDeadline } from './soft-deadline';
import { lazyMessageVisibility, lazySpendExtensionsFromEnv, lazyWaitingEntriesFromEnv } from './lazy-deps';
import { retryVisibilitySeconds, type MessageVisibility } from './retry-visibility';

// callback_url was checked at ingress (including the SSRF guard); here it only has to be a string.
const CallbackUrl = z.optional(z.string().check(z.minLength(1)));
const Envelope = { task_id: z.string().check(z.minLength(1), z.maxLength(128)), origin: TaskOriginSchema() };
const OrderId = z.int().check(z.positive());

/** The queue's message body (a JobMessage), with the input narrowed by kind. */
export const JobMessageSchema = z.discriminatedUnion('kind', [
  z.object({
    ...Envelope,
    kind: z.literal('cancel-order'),
    input: z.object({ order_id: OrderId, callback_url: CallbackUrl }),
  }),
  z.object({ ...Envelope, kind: z.literal('status'), input: z.object({ callback_url: CallbackUrl }) }),
  z.object({
    ...Envelope,
    kind: z.literal('price-alert'),
    input: z.object({
      gpu_type: z.string().check(z.minLength(1)),
      target_price: z.number().check(z.nonnegative()),
      image: z.string().check(z.minLength(1)),
      callback_url: CallbackUrl,
      wait_seconds: z.optional(z.int().check(z.nonnegative())),
      ...HostFilterShape(),
    }),
  }),
  z.object({
    ...Envelope,
    kind: z.literal('extend-order'),
    input: z.object({
      order_id: OrderId,
      hours: z.number().check(z.positive(), z.lte(MAX_LEASE_HOURS)),
      callback_url: CallbackUrl,
    }),
  }),
  z.object({
    ...Envelope,
    kind: z.literal('cancel-task'),
    input: z.object({ task_id: z.string().check(z.minLength(1)), callback_url: CallbackUrl }),
  }),
  z.object({
    ...Envelope,
    kind: z.literal('set-spot-price'),
    input: z.object({ order_id: OrderId, desired_price: z.number().check(z.positive()), callback_url: CallbackUrl }),
  }),
]);

/** Parses a record body; throws InvalidJobMessageError naming only the failing paths (no values). */
export const parseJobMessage = (body: string): TypedJobMessage => {
  let json: unknown;
  try {
    json = JSON.parse(body);
  } catch {
    throw new InvalidJobMessageError('job message is not JSON');
  }
  const parsed = JobMessageSchema.safeParse(json);
  if (!parsed.success) {
    const paths = parsed.error.issues.map((issue) => issue.path.join('.') || '(root)');
    throw new InvalidJobMessageError(`job message is invalid at ${[...new Set(paths)].join(', ')}`);
  }
  return parsed.data as TypedJobMessage;
};

/** ApproximateReceiveCount of a record; 1 when absent or unreadable (a first delivery). */
export const receiveCountOf = (record: SQSRecord): number => {
  const count = Number.parseInt(record.attributes?.ApproximateReceiveCount ?? '', 10);
  return Number.isFinite(count) && count > 0 ? count : 1;
};

export interface JobWorkerDeps extends JobDeps {
  readonly visibility: MessageVisibility;
  /** Epoch ms. @default Date.now */
  readonly now?: () => number;
  /** Retry delay unit (JOB_RETRY_BASE_MS): 2^n × this. @default 1000 */
  readonly retryBaseMs?: number;
  /** The job's own deadline. @default 300 000 (the spec's soft limit) */
  readonly softTimeLimitMs?: number;
}

/** Builds the SQS handler around injected ports (tests pass fakes; `handler` below passes adapters). */
export const createJobWorkerHandler = (deps: JobWorkerDeps) => {
  const now = deps.now ?? Date.now;
  const retryBaseMs = deps.retryBaseMs ?? 1_000;
  const softTimeLimitMs = deps.softTimeLimitMs ?? SOFT_TIME_LIMIT_SECONDS * 1_000;
  const softTimeLimitSeconds = Math.round(softTimeLimitMs / 1_000);

  /** Runs one job to its result. Throws only when the record should come back for another attempt. */
  const handleJob = async (message: TypedJobMessage, receiveCount: number): Promise<void> => {
    const existing = await deps.tasks.get(message.task_id);
    if (existing && FINAL_STATES.includes(existing.state)) {
      // A redelivery after the result was recorded (e.g. the delete was lost): nothing left to do.
      logger.info('task already finished; dropping the redelivered job', { state: existing.state, receiveCount });
      return;
    }
    await deps.tasks.update(message.task_id, { state: 'running' }, now());

    let result: TaskResult;
    try {
      result = await withSoftDeadline(runJob(message, deps, now()), softTimeLimitMs, softTimeLimitSeconds);
    } catch (error) {
      if (isRetryable(error) && !isFinalAttempt(receiveCount)) throw error;
      // A caller's mistake (cancel-order of an order that is not the account's) is WARN, a fault ERROR.
      logFailure('job failed; sending the failure result', error, { receiveCount });
      countMetric(MetricName.TasksFailed, { name: 'Kind', value: message.kind });
      result = failure(errorText(error));
    }
    const delivered = await completeTask(
      deps,
      { task_id: message.task_id, origin: message.origin, callback_url: message.input.callback_url },
      result,
      now(),
    );
    // One line per finished job (the workflow's is ReportResult's 'task finished'), so every task leaves a trail.
    logger.info('job finished', { kind: message.kind, success: isSuccessResult(result), delivered, receiveCount });
  };

  /** Delays the record's next receive by the retry delay; a failure here only loses the delay. */
  const scheduleRetry = async (record: SQSRecord, receiveCount: number): Promise<void> => {
    const seconds = retryVisibilitySeconds(receiveCount, retryBaseMs);
    try {
      await deps.visibility.change(record.receiptHandle, seconds);
    } catch (error) {
      logger.warn('could not set the retry delay; the queue visibility timeout applies', { error });
    }
  };

  const processRecord = async (record: SQSRecord): Promise<void> => {
    const receiveCount = receiveCountOf(record);
    try {
      const message = parseJobMessage(record.body);
      tagTask(message.task_id, { job_kind: message.kind });
      await handleJob(message, receiveCount);
    } catch (error) {
      if (error instanceof InvalidJobMessageError) {
        // The body may carry callback URLs with tokens: log where it is broken, never what it holds.
        logger.error('poison job message', { messageId: record.messageId, receiveCount, reason: error.message });
      } else {
        logger.warn('job attempt failed; will retry', {
          error,
          receiveCount,
          retryInSeconds: retryVisibilitySeconds(receiveCount, retryBaseMs),
        });
      }
      await scheduleRetry(record, receiveCount);
      throw error;
    }
  };

  /** The record handler: a throw (always an Error, as the processor reads `.message`) fails the record. */
  const recordHandler = async (record: SQSRecord): Promise<void> => {
    try {
      // Own task scope and subsegment per record: a record never carries another's task_id.
      await withTaskScope(() => tracedSegment('## job', () => processRecord(record)));
    } catch (error) {
      throw error instanceof Error ? error : new Error(errorText(error));
    }
  };

  return function processJobs(event: SQSEvent, context?: Context): Promise<SQSBatchResponse> {
    // One log scope per invocation (its function's context), and one per record inside it (recordHandler).
    return withInvocation(context, async () => {
      // One processor per batch: it holds the batch's state, and the same worker may run batches concurrently (local runtime, tests).
      const processor = new BatchProcessor(EventType.SQS);
      const { batchItemFailures } = await processPartialResponse(event, recordHandler, processor, {
        context,
        processInParallel: false,
        throwOnFullBatchFailure: false,
      });
      // A fresh array: with no failures the processor hands back a module-level constant.
      return { batchItemFailures: batchItemFailures.map(({ itemIdentifier }) => ({ itemIdentifier })) };
    });
  };
};

/** The worker's adapters from the env contract; fails fast naming what is missing. */
export const jobWorkerDepsFromEnv = (): JobWorkerDeps => {
  const env = relayEnv();
  if (!env.JOB_QUEUE_URL) throw new Error('JOB_QUEUE_URL is not set: the worker cannot delay retries');
  // Issue 40 §1: what only some jobs use is loaded on first use (./lazy-deps.ts): the waiting queue
  // (a price alert's standing order, cancel-task), the workflow starter (a price alert that fires) and
  // the spend reservations (extend-order, set-spot-price). from-env.ts is not imported here for that
  // reason: the table's own adapters are built directly.
  const waiting = lazyWaitingEntriesFromEnv(env);
  return {
    marketplace: marketplaceFromEnv(env),
    tasks: new DynamoDbTaskRepository(documentClient(), env.TABLE_NAME),
    notifier: notifierFromEnv(env),
    workflow: lazyWorkflowStarterFromEnv(env),
    leases: new DynamoDbLeaseBook(documentClient(), env.TABLE_NAME),
    waiting,
    // A price alert's standing order is admitted under the waiting queue's caps (issue 38 §1).
    standing: { waiting, caps: { perKey: env.MAX_WAITING_TASKS_PER_KEY, total: env.MAX_WAITING_TASKS } },
    spend: {
      store: lazySpendExtensionsFromEnv(env),
      // Extensions and raises are reservations like a create's: the same metrics (the SpendNearDailyLimit alarm's).
      onReserved: (usd, usedToday, key) => spendMetric('SpendReservedUsd', key, usd, usedToday),
      clock: () => Date.now() / 1000,
      ...(env.SPEND_LIMIT_USD_PER_DAY !== undefined ? { limitUsdPerDay: env.SPEND_LIMIT_USD_PER_DAY } : {}),
    },
    // SQS is called only to delay a failed job's retry: its client is loaded then.
    visibility: lazyMessageVisibility(env.JOB_QUEUE_URL),
    retryBaseMs: env.JOB_RETRY_BASE_MS,
    clock: Date.now,
    config: {
      defaultCurrency: env.DEFAULT_CURRENCY,
      defaultPorts: env.DEFAULT_PORTS,
      pollIntervalSeconds: env.ORDER_POLL_INTERVAL_SECONDS,
      readyTimeoutSeconds: env.ORDER_READY_TIMEOUT_SECONDS,
      ...(env.DEFAULT_MAX_HOURS !== undefined ? { defaultMaxHours: env.DEFAULT_MAX_HOURS } : {}),
    },
  };
};

// Built on the first invocation, not at import: importing the module (tests, the local runtime's
// start-up) reads no environment and builds no clients.
const worker = lazy(() => createJobWorkerHandler(jobWorkerDepsFromEnv()));

/** The Lambda entry point (SQS event source with ReportBatchItemFailures), traced as `## <handler>`. */
export const handler = budgetedHandler(async function processJobQueue(
  event: SQSEvent,
  context: Context,
): Promise<SQSBatchResponse> {
  return worker()(event, context);
});
