/**
 * Powertools logger, one per function, and metrics as CloudWatch embedded metric format (EMF) lines
 * of our own (`publishMetrics`). Every log line is JSON; the task id is
 * `task_id` (next to Powertools' `xray_trace_id`) so one task can be followed across API, workflow
 * and worker.
 *
 * What a line says about its invocation (function name and request id, `task_id` and the other keys
 * `tagTask` adds) comes from the invocation's own scope (AsyncLocalStorage), opened by every entry
 * point (`invocationHandler`) with the context Lambda passed it. Keys appended to the shared logger
 * are process-wide and outlive their invocation: in Lambda a warm instance serves the next
 * invocation with them, and the local runtime runs every function's invocations concurrently in one
 * process, where one invocation's keys (or its function name) would label another's lines. So
 * per-invocation keys live in the scope and end with it, each entry point also clears the logger's
 * own keys when it starts (Powertools `resetKeys`), and inside a scope a line's function fields are
 * the scope's alone (docs/operations.md "Logs").
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
import type { Context } from 'aws-lambda';

import { METRICS_NAMESPACE, MetricName, SERVICE_NAME } from '../../contract/telemetry';
import { isCallerError } from '../domain/errors';

export { METRICS_NAMESPACE, MetricName, SERVICE_NAME };

/** What a log line says about the function and the invocation (Powertools' context fields). */
type InvocationContext = Pick<Context, 'functionName' | 'invokedFunctionArn' | 'memoryLimitInMB' | 'awsRequestId'> & {
  readonly coldStart: boolean;
};

/** One invocation (or one SQS record of it): whose lines these are, and the keys only they carry. */
interface InvocationScope {
  /** Absent outside Lambda's calling convention (a test calling a handler with no context). */
  readonly context?: InvocationContext;
  /** `task_id` and the keys `tagTask` added with it; they end with the scope. */
  readonly keys: Record<string, string>;
  /**
   * Opened at an invocation boundary (and so owned by exactly one invocation or record), as opposed
   * to one `tagTask` opened itself, which may have leaked into whatever called that invocation.
   */
  readonly boundary: boolean;
}
const invocationScope = new AsyncLocalStorage<InvocationScope>();

/** Keys only an invocation's scope may set: a value appended to the shared logger is never used for them. */
const SCOPED_KEYS = ['task_id', 'job_kind'] as const;

/**
 * Powertools' standard JSON line, except that the function fields are the invocation scope's context
 * (none outside an invocation) and, inside a scope, `task_id` (and the other keys of `tagTask`) the
 * scope's keys, whatever a concurrent or earlier invocation left on the shared logger.
 */
class InvocationScopedLogFormatter extends LogFormatter {
  public formatAttributes(attributes: UnformattedAttributes, additionalLogAttributes: LogAttributes): LogItem {
    const scope = invocationScope.getStore();
    // Outside every invocation (module load, a test) a line belongs to no invocation: the context the
    // shared logger was last given is some earlier invocation's.
    const context = scope?.context;
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
    if (scope === undefined) return new LogItem({ attributes: base }).addAttributes(additionalLogAttributes);
    const rest = { ...additionalLogAttributes };
    for (const key of SCOPED_KEYS) delete rest[key];
    return new LogItem({ attributes: base }).addAttributes({ ...rest, ...scope.keys });
  }
}

export const logger = new Logger({ serviceName: SERVICE_NAME, logFormatter: new InvocationScopedLogFormatter() });

/**
 * Metrics are written as the EMF lines Powertools Metrics wrote (namespace METRICS_NAMESPACE, the
 * `service` dimension, the same `_aws` block and key order), by `publishMetrics` below rather than
 * by Powertools Metrics: the relay only ever emitted one blob at a time (`singleMetric`, or the fleet
 * watch's one report per sweep) and never used its buffering, cold-start metric or validation, and
 * the library cost every function ~12 KB of bundle and ~4.5 M instructions of module load (its
 * stores, env parsing and a Console built at import; BENCHMARKS.md §15, "Third pass").
 */
export const MetricUnit = { Count: 'Count', NoUnit: 'None' } as const;
export type MetricUnit = (typeof MetricUnit)[keyof typeof MetricUnit];

/** One metric of an EMF blob. */
export interface MetricValue {
  readonly name: string;
  readonly unit: MetricUnit;
  readonly value: number;
}

const TRUTHY = new Set(['1', 'y', 'yes', 't', 'true', 'on']);
const FALSY = new Set(['0', 'n', 'no', 'f', 'false', 'off']);
/** Powertools' extended boolean of an environment variable: undefined when unset or not a boolean. */
const envFlag = (name: string): boolean | undefined => {
  const value = process.env[name]?.trim().toLowerCase();
  if (value === undefined) return undefined;
  return TRUTHY.has(value) ? true : FALSY.has(value) ? false : undefined;
};

/** Powertools' rule: POWERTOOLS_METRICS_DISABLED when set, else off in dev mode (POWERTOOLS_DEV). */
const metricsDisabled = (): boolean => {
  const disabled = envFlag('POWERTOOLS_METRICS_DISABLED');
  return process.env.POWERTOOLS_METRICS_DISABLED !== undefined ? disabled === true : envFlag('POWERTOOLS_DEV') === true;
};

/**
 * Emits `values` at once as one EMF blob, with the `service` dimension and an optional one more: one
 * stdout line (Lambda's console adds a prefix that would hide the JSON from CloudWatch; in dev mode,
 * POWERTOOLS_DEV, Powertools used the console, and so does this).
 */
export const publishMetrics = (
  values: readonly MetricValue[],
  dimension?: { readonly name: string; readonly value: string },
): void => {
  if (values.length === 0 || metricsDisabled()) return;
  const dimensions: Record<string, string> = { service: SERVICE_NAME };
  if (dimension) dimensions[dimension.name] = dimension.value;
  const blob: Record<string, unknown> = {
    _aws: {
      Timestamp: Date.now(),
      CloudWatchMetrics: [
        {
          Namespace: METRICS_NAMESPACE,
          Dimensions: [Object.keys(dimensions)],
          Metrics: values.map(({ name, unit }) => ({ Name: name, Unit: unit })),
        },
      ],
    },
    ...dimensions,
  };
  for (const { name, value } of values) blob[name] = value;
  const line = JSON.stringify(blob);
  if (envFlag('POWERTOOLS_DEV') === true) console.log(line);
  else process.stdout.write(`${line}\n`);
};

/** Where the local runtime puts its client hook (local/iam-checks.ts: permission checks); never set in Lambda. */
const LOCAL_CLIENT_HOOK = Symbol.for('gpu-relay.aws-client-hook');

/** The AWS SDK's own call logger, by its name in a client's middleware stack. */
export const SDK_LOGGER_MIDDLEWARE = 'loggerMiddleware';

/**
 * An AWS SDK client as the adapters use it: the one seam where per-call tracing would go back
 * (Powertools `captureAWSv3Client`) if subsegments per SDK call are wanted again, and where the local
 * runtime adds its IAM check middleware to every client a handler builds.
 *
 * The SDK's logger middleware is removed: the relay gives its clients no logger (it logs calls
 * itself), yet that middleware copies every call's input and answer through the operation's schema
 * to hide sensitive fields before handing them to the no-op logger. On a 100 KB DynamoDB item
 * (the host index, a ledger day) that walk cost as much CPU as the call's own unmarshalling.
 */
export const traceClient = <T extends { middlewareStack: { remove(name: string): boolean } }>(client: T): T => {
  client.middlewareStack.remove(SDK_LOGGER_MIDDLEWARE);
  const hook = (globalThis as Record<symbol, unknown>)[LOCAL_CLIENT_HOOK];
  if (typeof hook === 'function') (hook as (client: T) => void)(client);
  return client;
};

/** Emits one count immediately (its own EMF blob), with an optional dimension. */
export const countMetric = (name: string, dimension?: { name: string; value: string }): void =>
  publishMetrics([{ name, unit: MetricUnit.Count, value: 1 }], dimension);

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
  publishMetrics([{ name, unit: MetricUnit.NoUnit, value: usd }], { name: 'key', value: key });
  if (usedToday !== undefined)
    publishMetrics([{ name: MetricName.SpendUsedTodayUsd, unit: MetricUnit.NoUnit, value: usedToday }]);
};

/** Runs `work`; the seam for a named subsegment (see `traceClient`). */
export const tracedSegment = async <R>(_name: string, work: () => Promise<R>): Promise<R> => work();

let invoked = false;
/** Powertools' cold start rule: the first invocation of an on-demand instance (not a provisioned one). */
const takeColdStart = (): boolean => {
  const cold = !invoked && process.env.AWS_LAMBDA_INITIALIZATION_TYPE?.trim() === 'on-demand';
  invoked = true;
  return cold;
};

/** The context fields of an invocation's lines, from the context Lambda (or the local runtime) passed. */
const invocationContextOf = (context: unknown): InvocationContext | undefined => {
  if (typeof context !== 'object' || context === null) return undefined;
  const { functionName, invokedFunctionArn, memoryLimitInMB, awsRequestId } = context as Partial<Context>;
  if (typeof functionName !== 'string') return undefined;
  return {
    functionName,
    invokedFunctionArn: invokedFunctionArn ?? '',
    memoryLimitInMB: memoryLimitInMB ?? '',
    awsRequestId: awsRequestId ?? '',
    coldStart: takeColdStart(),
  };
};

/**
 * Runs one invocation in its own scope: its lines carry its own function name and request id, and no
 * key of another invocation. The logger's own keys are cleared first, as `injectLambdaContext({
 * resetKeys: true })` would: nothing appended during an earlier invocation of a warm instance
 * labels this one.
 */
export const withInvocation = <R>(context: unknown, work: () => Promise<R>): Promise<R> => {
  logger.resetKeys();
  return invocationScope.run({ boundary: true, context: invocationContextOf(context), keys: {} }, work);
};

/**
 * Wraps a Lambda entry point (API chain, Step Functions task, SQS worker, fleet watch, safety net):
 * every invocation runs in its own scope (`withInvocation`) with the context it was called with.
 */
export const invocationHandler =
  <E, C extends Context | undefined, R>(handler: (event: E, context: C) => Promise<R>) =>
  (event: E, context: C): Promise<R> =>
    withInvocation(context, () => handler(event, context));

/**
 * Starts a fresh scope without keys for the rest of the current invocation, from inside it: its
 * lines carry no task id until `tagTask`, whatever another invocation tagged; the function's context
 * stays the invocation's.
 */
export const beginInvocation = (): void => {
  invocationScope.enterWith({ boundary: true, context: invocationScope.getStore()?.context, keys: {} });
};

/** Runs `work` in its own scope without keys, in the current invocation's context (one SQS record). */
export const withTaskScope = <R>(work: () => Promise<R>): Promise<R> =>
  invocationScope.run({ boundary: true, context: invocationScope.getStore()?.context, keys: {} }, work);

/**
 * Correlates the rest of this invocation (or SQS record) with one task: `task_id` (plus `extra`)
 * on every log line (each also carries `xray_trace_id`, which leads from a task's lines to its
 * trace). The keys live in the invocation's scope and end with it; never `logger.appendKeys` for a
 * per-invocation key. Outside an invocation's scope it opens one for the rest of the current call chain.
 */
export const tagTask = (
  taskId: string,
  extra: Readonly<Partial<Record<(typeof SCOPED_KEYS)[number], string>>> = {},
): void => {
  const keys = { ...extra, task_id: taskId };
  const scope = invocationScope.getStore();
  if (scope?.boundary) Object.assign(scope.keys, keys);
  else invocationScope.enterWith({ boundary: false, context: scope?.context, keys });
};

/**
 * Logs a failure at the level it deserves: a caller's mistake (`isCallerError`: an order that is not
 * the account's, a price under the floor, no server) at WARN with the error's name and message and no
 * stack, since nothing is broken; any other failure (a fault) at ERROR with the error and its stack.
 */
export const logFailure = (message: string, error: unknown, fields: Readonly<Record<string, unknown>> = {}): void => {
  if (isCallerError(error) && error instanceof Error) {
    logger.warn(message, { ...fields, error: { name: error.name, message: error.message } });
  } else {
    logger.error(message, { ...fields, error });
  }
};
