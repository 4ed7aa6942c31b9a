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
  /** A rate-limited answer doubled the shared marketplace pacing interval (the log line names the new interval). */
  MarketplaceIntervalWidened: 'MarketplaceIntervalWidened',
  CallbackFailures: 'CallbackFailures',
  CallbackDeliveries: 'CallbackDeliveries',
  ChatFailures: 'ChatFailures',
  /** Fleet watch (issue 14): leases cancelled at their end, and cancellations that failed (alarmed). */
  LeasesCancelled: 'LeasesCancelled',
  /** Orders the relay placed that no task kept, cancelled by the fleet watch (issue 20, item 5). */
  OrphanOrdersCancelled: 'OrphanOrdersCancelled',
  LeaseCancelFailures: 'LeaseCancelFailures',
  LeaseWarnings: 'LeaseWarnings',
  /** A sweep that threw (alarmed). */
  WatchErrors: 'WatchErrors',
  /** Per sweep: leases the due query returned, items read from the table, marketplace calls, work deferred to the next sweep. */
  LeasesDue: 'LeasesDue',
  WatchTableReads: 'WatchTableReads',
  WatchMarketplaceCalls: 'WatchMarketplaceCalls',
  WatchDeferred: 'WatchDeferred',
  /** Standing orders (issue 23): waiting at a sweep's start, resumed with a server, failed when their wait ended. */
  WaitingTasks: 'WaitingTasks',
  WaitingTasksResumed: 'WaitingTasksResumed',
  WaitingTasksExpired: 'WaitingTasksExpired',
  /** Issue 38 §1: waiting slots a sweep's recount repaired (freed without an entry, taken again, counts set); 0 when none drifted. */
  WaitingSlotsRepaired: 'WaitingSlotsRepaired',
  /** Watched orders whose marketplace status changed (running → paused, expired, gone…). */
  OrderStatusChanges: 'OrderStatusChanges',
  /** Lifecycle events sent to callback URLs, and those that could not be delivered. */
  LifecycleEvents: 'LifecycleEvents',
  LifecycleEventFailures: 'LifecycleEventFailures',
  /** Leases moved by extend-order, and spot price changes. */
  LeasesExtended: 'LeasesExtended',
  SpotPriceChanges: 'SpotPriceChanges',
  /** A placed order the report step could not record for the watch (it retries; this counts the tries that failed). */
  LeaseRecordFailures: 'LeaseRecordFailures',
  /** Spending (issue 24), USD with a `key` dimension (and without, for the relay's total): worst cases reserved, actual costs settled. */
  SpendReservedUsd: 'SpendReservedUsd',
  SpendSettledUsd: 'SpendSettledUsd',
  /** The relay's used total (held + settled) of the UTC day after a reservation: the SpendNearDailyLimit alarm's metric (Maximum). */
  SpendUsedTodayUsd: 'SpendUsedTodayUsd',
} as const;
