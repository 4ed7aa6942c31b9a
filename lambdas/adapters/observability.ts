/**
 * Powertools logger, metrics and tracer, one of each per function. Every log line is JSON; the
 * task id is appended as `task_id` so one task can be followed across API, workflow and worker.
 */
import { Logger } from '@aws-lambda-powertools/logger';
import { Metrics, MetricUnit } from '@aws-lambda-powertools/metrics';
import { Tracer } from '@aws-lambda-powertools/tracer';

export const SERVICE_NAME = 'gpu-relay';
export const METRICS_NAMESPACE = 'GpuRelay';

export const logger = new Logger({ serviceName: SERVICE_NAME });
export const metrics = new Metrics({ namespace: METRICS_NAMESPACE, serviceName: SERVICE_NAME });
export const tracer = new Tracer({ serviceName: SERVICE_NAME });

/** Metric names (the dashboard and alarms use the same names). */
export const MetricName = {
  TasksAccepted: 'TasksAccepted',
  OrdersPlaced: 'OrdersPlaced',
  OrdersReady: 'OrdersReady',
  OrderTimeouts: 'OrderTimeouts',
  TasksFailed: 'TasksFailed',
  SignatureRejected: 'SignatureRejected',
  RateLimited: 'RateLimited',
  MarketplaceErrors: 'MarketplaceErrors',
  CallbackFailures: 'CallbackFailures',
  CallbackDeliveries: 'CallbackDeliveries',
  ChatFailures: 'ChatFailures',
} as const;

/** Emits one count immediately (its own EMF blob), with an optional dimension. */
export const countMetric = (name: string, dimension?: { name: string; value: string }): void => {
  // singleMetric flushes at once, so no handler has to remember publishStoredMetrics.
  const single = metrics.singleMetric();
  if (dimension) single.addDimension(dimension.name, dimension.value);
  single.addMetric(name, MetricUnit.Count, 1);
};
