/**
 * Powertools logger and metrics, one of each per function. Every log line is JSON; the task id is
 * appended as `task_id` (next to Powertools' `xray_trace_id`) so one task can be followed across
 * API, workflow and worker.
 *
 * The task id of a line comes from the invocation's task scope (AsyncLocalStorage) when there is
 * one. Logger keys are process-wide: in Lambda one process serves one invocation at a time, but the
 * local runtime runs every function's invocations concurrently in one process, where a key appended
 * by one invocation would otherwise label (or be wiped by) another's lines.
 *
 * Tracing is Lambda active tracing alone (no X-Ray SDK in the bundle, BENCHMARKS.md "Tracing"):
 * Lambda records each invocation's segment, and the SDK's recursion-detection middleware forwards
 * `_X_AMZN_TRACE_ID` on every AWS call, so Step Functions (tracing on) and SQS → Lambda keep one
 * trace per task across API, workflow and worker. What is gone: a subsegment per SDK call and the
 * `task_id` annotation; every log line carries `task_id` and `xray_trace_id` instead.
 */
import { AsyncLocalStorage } from 'node:async_hooks';
import { Logger, LogFormatter, LogItem } from '@aws-lambda-powertools/logger';
import type { LogAttributes, UnformattedAttributes } from '@aws-lambda-powertools/logger/types';
import type middy from '@middy/core';
import { Metrics, MetricUnit } from '@aws-lambda-powertools/metrics';

import { METRICS_NAMESPACE, MetricName, SERVICE_NAME } from '../../contract/telemetry';

export { METRICS_NAMESPACE, MetricName, SERVICE_NAME };

/** The task an invocation (or one SQS record) works on; `taskId` unset = no task (yet). */
interface TaskScope {
  taskId?: string;
  /**
   * Opened at an invocation boundary (and so owned by exactly one invocation or record), as opposed
   * to one `tagTask` opened itself, which may have leaked into whatever called that invocation.
   */
  readonly boundary: boolean;
}
const taskScope = new AsyncLocalStorage<TaskScope>();

/**
 * Powertools' standard JSON line, except that inside a task scope `task_id` is the scope's (and
 * absent when the scope has none), whatever a concurrent invocation appended to the shared logger.
 */
class TaskScopedLogFormatter extends LogFormatter {
  public formatAttributes(attributes: UnformattedAttributes, additionalLogAttributes: LogAttributes): LogItem {
    const context = attributes.lambdaContext;
    const base: LogAttributes = {
      level: attributes.logLevel,
      message: attributes.message,
      timestamp: this.formatTimestamp(attributes.timestamp),
      service: attributes.serviceName,
      cold_start: context?.coldStart,
      function_arn: context?.invokedFunctionArn,
      function_memory_size: context?.memoryLimitInMB,
      function_name: context?.functionName,
      function_request_id: context?.awsRequestId,
      sampling_rate: attributes.sampleRateValue,
      xray_trace_id: attributes.xRayTraceId,
    };
    const scope = taskScope.getStore();
    if (scope === undefined) return new LogItem({ attributes: base }).addAttributes(additionalLogAttributes);
    const { task_id: _appended, ...rest } = additionalLogAttributes;
    return new LogItem({ attributes: base }).addAttributes(
      scope.taskId === undefined ? rest : { ...rest, task_id: scope.taskId },
    );
  }
}

export const logger = new Logger({ serviceName: SERVICE_NAME, logFormatter: new TaskScopedLogFormatter() });
export const metrics = new Metrics({ namespace: METRICS_NAMESPACE, serviceName: SERVICE_NAME });

/** Where the local runtime puts its client hook (local/iam-checks.ts: permission checks); never set in Lambda. */
const LOCAL_CLIENT_HOOK = Symbol.for('gpu-relay.aws-client-hook');

/**
 * An AWS SDK client as the adapters use it: the one seam where per-call tracing would go back
 * (Powertools `captureAWSv3Client`) if subsegments per SDK call are wanted again, and where the local
 * runtime adds its IAM check middleware to every client a handler builds.
 */
export const traceClient = <T>(client: T): T => {
  const hook = (globalThis as Record<symbol, unknown>)[LOCAL_CLIENT_HOOK];
  if (typeof hook === 'function') (hook as (client: T) => void)(client);
  return client;
};

/** Emits one count immediately (its own EMF blob), with an optional dimension. */
export const countMetric = (name: string, dimension?: { name: string; value: string }): void => {
  // singleMetric flushes at once, so no handler has to remember publishStoredMetrics.
  const single = metrics.singleMetric();
  if (dimension) single.addDimension(dimension.name, dimension.value);
  single.addMetric(name, MetricUnit.Count, 1);
};

/**
 * Spending (issue 24): `usd` reserved or settled for a caller key (dimension `key`), and the relay's
 * used total of the day after the change (SpendUsedTodayUsd, no extra dimension: the 80 % alarm's metric).
 */
export const spendMetric = (
  name: 'SpendReservedUsd' | 'SpendSettledUsd',
  key: string,
  usd: number,
  usedToday?: number,
): void => {
  const single = metrics.singleMetric();
  single.addDimension('key', key);
  single.addMetric(name, MetricUnit.NoUnit, usd);
  if (usedToday !== undefined)
    metrics.singleMetric().addMetric(MetricName.SpendUsedTodayUsd, MetricUnit.NoUnit, usedToday);
};

/** Runs `work`; the seam for a named subsegment (see `traceClient`). */
export const tracedSegment = async <R>(_name: string, work: () => Promise<R>): Promise<R> => work();

/**
 * Starts a fresh, empty task scope for the rest of the current invocation, from inside it (a middy
 * `before`): its lines carry no task id until `tagTask`, whatever another invocation tagged.
 */
export const beginInvocation = (): void => {
  taskScope.enterWith({ boundary: true });
};

/** Runs `work` in its own empty task scope (one invocation, one SQS record). */
export const withTaskScope = <R>(work: () => Promise<R>): Promise<R> => taskScope.run({ boundary: true }, work);

/** Middy middleware, first in a chain: a fresh task scope per request. */
export const taskScopeMiddleware = (): middy.MiddlewareObj => ({
  before: () => {
    beginInvocation();
  },
});

/** Wraps a handler that is not built with middy (SQS worker, execution-ended): a fresh task scope. */
export const tracedHandler =
  <A extends unknown[], R>(handler: (...args: A) => Promise<R>): ((...args: A) => Promise<R>) =>
  (...args: A): Promise<R> =>
    withTaskScope(() => handler(...args));

/**
 * Correlates the rest of this invocation (or SQS record) with one task: `task_id` (plus `extra`)
 * on every log line (each also carries `xray_trace_id`, which leads from a task's lines to its
 * trace). Outside an invocation's scope it opens one for the rest of the current call chain. Callers that handle several tasks per invocation remove the
 * keys when done (`logger.removeKeys`).
 */
export const tagTask = (taskId: string, extra: Readonly<Record<string, string>> = {}): void => {
  logger.appendKeys({ task_id: taskId, ...extra });
  const scope = taskScope.getStore();
  if (scope?.boundary) scope.taskId = taskId;
  else taskScope.enterWith({ taskId, boundary: false });
};
