/**
 * The fleet watch (issue 14): a function on an EventBridge schedule that sweeps leases and watched
 * orders every WATCH_INTERVAL_SECONDS (lambdas/handlers/watch/fleet-watch.ts), and what monitoring
 * needs to watch it: its two alarms and its dashboard widget, built here and placed by the Monitoring
 * construct (lib/constructs/monitoring.ts) next to the others.
 *
 * EventBridge schedules run at most once a minute and only in whole minutes, so in AWS the interval
 * must be a multiple of 60 s; anything else fails synthesis with the reason. `npm start` has no such
 * limit (its timer takes any value; the e2e tests use 1 s).
 */
import { Duration } from 'aws-cdk-lib';
import type * as cloudwatch from 'aws-cdk-lib/aws-cloudwatch';
import type * as dynamodb from 'aws-cdk-lib/aws-dynamodb';
import * as events from 'aws-cdk-lib/aws-events';
import * as targets from 'aws-cdk-lib/aws-events-targets';
import type * as lambda from 'aws-cdk-lib/aws-lambda';
import type * as logs from 'aws-cdk-lib/aws-logs';
import type * as sfn from 'aws-cdk-lib/aws-stepfunctions';
import { Construct } from 'constructs';
import { WATCH_TIMEOUT_SECONDS } from '../../contract/resources';
import { FLEET_WATCH_ENTRY } from '../../contract/routes';
import { MetricName } from '../../contract/telemetry';
import { RelayFunction } from './relay-function';
import { graph, relayMetric } from './relay-metrics';
import type { RelaySecrets, SecretName } from './relay-secrets';
import { grantTableAccess } from './table-access';

export interface FleetWatchProps {
  readonly table: dynamodb.ITable;
  readonly secrets: RelaySecrets;
  /** Base environment of relay functions (config values, TABLE_NAME); secret ARNs are bound here. */
  readonly environment: Readonly<Record<string, string>>;
  /** WATCH_INTERVAL_SECONDS: a whole number of minutes in AWS (validated). */
  readonly intervalSeconds: number;
  /** @default logs.RetentionDays.ONE_MONTH */
  readonly logRetention?: logs.RetentionDays;
  /** Repo-relative handler file (infra tests use a stand-in). @default FLEET_WATCH_ENTRY */
  readonly entry?: string;
  /** The create-order workflow: the watch resumes standing orders with a new execution (issue 23). */
  readonly stateMachine?: sfn.IStateMachine;
}

/** The watch reads the marketplace key (my_orders, cancel_order), signs events and posts to chat. */
/** `callerKeys`: the data key that seals a replaceable task's kept env (issue 29 §6), which a replacement round opens and seals again. */
export const WATCH_SECRETS: readonly SecretName[] = ['apiKey', 'callback', 'chat', 'callerKeys'];

/**
 * The schedule's period for WATCH_INTERVAL_SECONDS. Below 60 s, or not a whole number of minutes,
 * is a synth error: EventBridge cannot run a rule more often than once a minute, and a silently
 * rounded interval would break the "cancelled at most WATCH_INTERVAL_SECONDS after the end" promise.
 */
export const watchScheduleRate = (intervalSeconds: number): Duration => {
  if (!Number.isInteger(intervalSeconds) || intervalSeconds < 60 || intervalSeconds % 60 !== 0) {
    throw new Error(
      `watchIntervalSeconds (WATCH_INTERVAL_SECONDS) must be a whole number of minutes in AWS (60, 120, …): EventBridge schedules run at most once a minute; got ${intervalSeconds}. Shorter intervals work only locally (npm start).`,
    );
  }
  return Duration.minutes(intervalSeconds / 60);
};

export interface WatchAlarmSpec {
  readonly id: string;
  readonly metric: cloudwatch.IMetric;
  readonly options: Omit<cloudwatch.CreateAlarmOptions, 'evaluationPeriods'>;
}

/**
 * The watch's alarms, for Monitoring to create on its topic: WatchErrors (a sweep that threw, counted
 * by the handler; the function's own Errors/Throttles alarms, like every relay function's, also catch
 * a timeout or an init failure) and LeaseCancelFailures (a cancel_order of an expired lease failed: a GPU runs past its lease until a
 * later sweep succeeds). Both ≥ 1 in 5 minutes.
 */
export const fleetWatchAlarms = (): WatchAlarmSpec[] => [
  {
    id: 'WatchErrors',
    metric: relayMetric(MetricName.WatchErrors),
    options: {
      threshold: 1,
      alarmDescription:
        'A fleet-watch sweep failed: leases are not expired and status changes not reported until one succeeds. RUNBOOK: WatchErrors.',
    },
  },
  {
    id: 'LeaseCancelFailures',
    metric: relayMetric(MetricName.LeaseCancelFailures),
    options: {
      threshold: 1,
      alarmDescription:
        'cancel_order failed for an order whose lease ended; it keeps running (and costing) until a sweep cancels it. RUNBOOK: LeaseCancelFailures.',
    },
  },
];

/** The dashboard widget: what each 5 minutes of sweeps found and did, and what it cost in table reads. */
export const fleetWatchWidget = (): cloudwatch.GraphWidget =>
  graph(
    'Fleet watch: leases and order status',
    24,
    [
      relayMetric(MetricName.LeasesDue, 'Due'),
      relayMetric(MetricName.LeaseWarnings, 'Warned'),
      relayMetric(MetricName.LeasesCancelled, 'Cancelled'),
      relayMetric(MetricName.OrphanOrdersCancelled, 'Orphans cancelled'),
      relayMetric(MetricName.LeaseCancelFailures, 'Failed cancels'),
      relayMetric(MetricName.OrderStatusChanges, 'Status changes'),
      relayMetric(MetricName.LifecycleEvents, 'Events sent'),
      relayMetric(MetricName.LifecycleEventFailures, 'Events failed'),
      relayMetric(MetricName.WatchDeferred, 'Deferred'),
    ],
    [
      relayMetric(MetricName.WatchTableReads, 'Table reads'),
      relayMetric(MetricName.WatchMarketplaceCalls, 'Marketplace calls'),
    ],
  );

export class FleetWatch extends Construct {
  public readonly fn: lambda.Function;
  public readonly rule: events.Rule;

  public constructor(scope: Construct, id: string, props: FleetWatchProps) {
    super(scope, id);
    const rate = watchScheduleRate(props.intervalSeconds);

    const relayFn = new RelayFunction(this, 'Function', {
      entry: props.entry ?? FLEET_WATCH_ENTRY,
      description: 'GPU relay: fleet watch (lease expiry, warnings, order status changes)',
      // Above the sweep's worst case (test/unit/time-budgets.test.ts); the handler defers what would not fit.
      timeout: Duration.seconds(WATCH_TIMEOUT_SECONDS),
      logRetention: props.logRetention,
      environment: {
        ...props.environment,
        TABLE_NAME: props.table.tableName,
        ...(props.stateMachine ? { STATE_MACHINE_ARN: props.stateMachine.stateMachineArn } : {}),
      },
    });
    this.fn = relayFn.fn;
    props.stateMachine?.grantStartExecution(this.fn);
    // A failed sweep is not retried by Lambda: the next tick is a retry, and an old event is stale.
    this.fn.configureAsyncInvoke({
      retryAttempts: 0,
      maxEventAge: Duration.seconds(Math.max(60, props.intervalSeconds)),
    });

    // Item actions on its item families only (lib/constructs/table-access.ts), BatchGetItem included:
    // the due index reads buckets and due leases by key.
    grantTableAccess(props.table, this.fn, 'FleetWatch');
    props.secrets.bindTo(this.fn, WATCH_SECRETS);

    this.rule = new events.Rule(this, 'Schedule', {
      description: `GPU relay: fleet-watch sweep every ${props.intervalSeconds} s`,
      schedule: events.Schedule.rate(rate),
      targets: [new targets.LambdaFunction(this.fn, { retryAttempts: 0 })],
    });
  }
}
