/**
 * Telemetry names: the Powertools service and metrics namespace the functions emit under, and the
 * metric names. The dashboard and alarms (lib/constructs/monitoring.ts) read the same names, so a
 * rename cannot silently blind an alarm.
 */
export const SERVICE_NAME = 'gpu-relay';
export const METRICS_NAMESPACE = 'GpuRelay';

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
