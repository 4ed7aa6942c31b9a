/**
 * Alarms, their SNS topic and the operations dashboard. Metric names and the namespace come from the
 * code that emits them (both read contract/telemetry.ts), so a rename cannot silently blind an alarm.
 */
import { ArnFormat, Duration, RemovalPolicy, Stack } from 'aws-cdk-lib';
import type * as apigwv2 from 'aws-cdk-lib/aws-apigatewayv2';
import * as cloudwatch from 'aws-cdk-lib/aws-cloudwatch';
import * as actions from 'aws-cdk-lib/aws-cloudwatch-actions';
import * as iam from 'aws-cdk-lib/aws-iam';
import * as kms from 'aws-cdk-lib/aws-kms';
import type * as lambda from 'aws-cdk-lib/aws-lambda';
import * as sns from 'aws-cdk-lib/aws-sns';
import * as subscriptions from 'aws-cdk-lib/aws-sns-subscriptions';
import type * as sfn from 'aws-cdk-lib/aws-stepfunctions';
import type * as sqs from 'aws-cdk-lib/aws-sqs';
import { Construct } from 'constructs';
import { HARD_TIME_LIMIT_SECONDS } from '../../contract/limits';
import { METRICS_NAMESPACE, MetricName } from '../../contract/telemetry';
import { fleetWatchAlarms, fleetWatchWidget } from './fleet-watch';
import { FIVE_MINUTES, graph, relayMetric } from './relay-metrics';
import { spendAlarm, spendWidget } from './spend-monitoring';

export interface MonitoringProps {
  /** @default - no e-mail subscription */
  readonly alarmEmail?: string;
  readonly deadLetterQueue: sqs.IQueue;
  /**
   * The job queue: alarmed on the age of its oldest message (JobQueueOldestMessageAge).
   * @default - no age alarm
   */
  readonly jobQueue?: sqs.IQueue;
  /**
   * Age in seconds of the oldest queued job that raises JobQueueOldestMessageAge.
   * @default JOB_AGE_ALARM_SECONDS (the hard time limit, 600 s)
   */
  readonly jobAgeThresholdSeconds?: number;
  /**
   * Status-change events the workflow's safety net could not handle (OrderWorkflow.safetyNetDeadLetterQueue).
   * @default - no alarm
   */
  readonly safetyNetDeadLetterQueue?: sqs.IQueue;
  readonly stateMachine: sfn.IStateMachine;
  readonly httpApi: apigwv2.IHttpApi;
  /** Every relay function, by a stable name; each gets an errors and a throttles alarm. */
  readonly functions: Readonly<Record<string, lambda.IFunction>>;
  /**
   * The fleet-watch function (FleetWatch.fn): its WatchErrors and LeaseCancelFailures alarms and its
   * dashboard widget (lib/constructs/fleet-watch.ts).
   * @default - no fleet-watch alarms or widget
   */
  readonly fleetWatch?: lambda.IFunction;
  /**
   * SPEND_LIMIT_USD_PER_DAY: with it, the SpendNearDailyLimit alarm at 80 % (lib/constructs/spend-monitoring.ts).
   * @default - no spending alarm (the spending widget is always there)
   */
  readonly spendLimitUsdPerDay?: number;
  /**
   * Marketplace code-5 ("too many requests") answers per 5 minutes that raise the alarm.
   * @default 10
   */
  readonly marketplaceThrottledThreshold?: number;
  /**
   * Share of failed callback deliveries (0..1) per 5 minutes that raises the alarm.
   * @default 0.2
   */
  readonly callbackFailureRateThreshold?: number;
  /**
   * API 5xx answers per 5 minutes that raise the alarm.
   * @default 1
   */
  readonly api5xxThreshold?: number;
}

/**
 * Age of the oldest queued job that raises JobQueueOldestMessageAge: the hard time limit (600 s). A job
 * ends within its 300 s soft limit plus 2 + 4 + 8 s of retry delays, so a message older than the hard
 * limit means callers already wait longer than any task may take: a backlog (workers stalled, throttled
 * or too few), or an attempt that crashed and left its message invisible for the visibility timeout.
 */
export const JOB_AGE_ALARM_SECONDS = HARD_TIME_LIMIT_SECONDS;

/** The CloudWatch service principal and the conditions that limit it to this account's alarms. */
const cloudWatchAlarmsOf = (stack: Stack) => ({
  principal: new iam.ServicePrincipal('cloudwatch.amazonaws.com'),
  // Only this account's alarms may publish or use the key (confused-deputy guard).
  conditions: {
    StringEquals: { 'aws:SourceAccount': stack.account },
    ArnLike: {
      'aws:SourceArn': stack.formatArn({
        service: 'cloudwatch',
        resource: 'alarm',
        resourceName: '*',
        arnFormat: ArnFormat.COLON_RESOURCE_NAME,
      }),
    },
  },
});

/** p50 and p99 of a latency metric (`metric`: the construct's own, given the options), per 5 minutes. */
const p50AndP99 = (metric: (options: cloudwatch.MetricOptions) => cloudwatch.Metric): cloudwatch.Metric[] =>
  [50, 99].map((p) => metric({ statistic: cloudwatch.Stats.p(p), period: FIVE_MINUTES, label: `p${p}` }));

/**
 * Sum of one relay metric over every dimension combination it is emitted with (e.g. TasksAccepted by
 * kind). Dashboards only: alarms cannot use SEARCH.
 */
const relayTotal = (metricName: string, label = metricName): cloudwatch.MathExpression =>
  new cloudwatch.MathExpression({
    expression: `SUM(SEARCH('Namespace="${METRICS_NAMESPACE}" MetricName="${metricName}"', 'Sum', 300))`,
    label,
    period: FIVE_MINUTES,
  });

/** One line per dimension value of a relay metric (e.g. MarketplaceErrors by ResultCode). */
const relayBreakdown = (metricName: string, label: string): cloudwatch.MathExpression =>
  new cloudwatch.MathExpression({
    expression: `SEARCH('Namespace="${METRICS_NAMESPACE}" MetricName="${metricName}"', 'Sum', 300)`,
    label,
    period: FIVE_MINUTES,
  });

export class Monitoring extends Construct {
  public readonly alarmTopic: sns.Topic;
  public readonly dashboard: cloudwatch.Dashboard;
  /** Every alarm, by construct id. */
  public readonly alarms: Record<string, cloudwatch.Alarm> = {};

  public constructor(scope: Construct, id: string, props: MonitoringProps) {
    super(scope, id);
    const code5Threshold = props.marketplaceThrottledThreshold ?? 10;
    const callbackRate = props.callbackFailureRateThreshold ?? 0.2;
    if (!(callbackRate > 0 && callbackRate <= 1))
      throw new Error(`callbackFailureRateThreshold must be in (0, 1], got ${callbackRate}`);
    if (!(code5Threshold >= 1))
      throw new Error(`marketplaceThrottledThreshold must be at least 1, got ${code5Threshold}`);

    // CloudWatch alarms cannot publish to a topic under the AWS-managed aws/sns key, hence our own key.
    const topicKey = new kms.Key(this, 'AlarmTopicKey', {
      description: 'GPU relay: encrypts the alarm topic',
      enableKeyRotation: true,
      removalPolicy: RemovalPolicy.DESTROY,
      pendingWindow: Duration.days(7),
    });
    const cloudWatch = cloudWatchAlarmsOf(Stack.of(this));
    topicKey.addToResourcePolicy(
      new iam.PolicyStatement({
        sid: 'CloudWatchAlarmsUseTheKey',
        principals: [cloudWatch.principal],
        actions: ['kms:Decrypt', 'kms:GenerateDataKey*'],
        resources: ['*'],
        conditions: cloudWatch.conditions,
      }),
    );
    this.alarmTopic = new sns.Topic(this, 'AlarmTopic', {
      displayName: 'GPU relay alarms',
      enforceSSL: true,
      masterKey: topicKey,
    });
    // enforceSSL gives the topic a policy holding only its Deny, which replaces SNS's default policy:
    // without this Allow, CloudWatch may not publish and every alarm fails silently (issue 21 item 3).
    this.alarmTopic.addToResourcePolicy(
      new iam.PolicyStatement({
        sid: 'CloudWatchAlarmsPublish',
        principals: [cloudWatch.principal],
        actions: ['sns:Publish'],
        resources: [this.alarmTopic.topicArn],
        conditions: cloudWatch.conditions,
      }),
    );
    if (props.alarmEmail) this.alarmTopic.addSubscription(new subscriptions.EmailSubscription(props.alarmEmail));
    const toTopic = new actions.SnsAction(this.alarmTopic);

    const alarm = (
      alarmId: string,
      metric: cloudwatch.IMetric,
      options: Omit<cloudwatch.CreateAlarmOptions, 'evaluationPeriods'> & { evaluationPeriods?: number },
    ): cloudwatch.Alarm => {
      const result = new cloudwatch.Alarm(this, alarmId, {
        metric,
        evaluationPeriods: 1,
        comparisonOperator: cloudwatch.ComparisonOperator.GREATER_THAN_OR_EQUAL_TO_THRESHOLD,
        // No data means nothing happened: no failures, no messages, no traffic.
        treatMissingData: cloudwatch.TreatMissingData.NOT_BREACHING,
        ...options,
      });
      result.addAlarmAction(toTopic);
      // The operator also hears the recovery.
      result.addOkAction(toTopic);
      this.alarms[alarmId] = result;
      return result;
    };

    alarm(
      'DeadLetterQueueNotEmpty',
      props.deadLetterQueue.metricApproximateNumberOfMessagesVisible({
        period: Duration.minutes(1),
        statistic: cloudwatch.Stats.MAXIMUM,
      }),
      {
        threshold: 1,
        alarmDescription: 'A job failed all its receives and waits in the DLQ. RUNBOOK: DeadLetterQueueNotEmpty.',
      },
    );

    if (props.jobQueue) {
      const seconds = props.jobAgeThresholdSeconds ?? JOB_AGE_ALARM_SECONDS;
      alarm(
        'JobQueueOldestMessageAge',
        props.jobQueue.metricApproximateAgeOfOldestMessage({
          period: Duration.minutes(1),
          statistic: cloudwatch.Stats.MAXIMUM,
        }),
        {
          threshold: seconds,
          alarmDescription: `The oldest queued job has waited ${seconds} s or more. RUNBOOK: JobQueueOldestMessageAge.`,
        },
      );
    }

    if (props.safetyNetDeadLetterQueue) {
      alarm(
        'SafetyNetDeadLetterQueueNotEmpty',
        props.safetyNetDeadLetterQueue.metricApproximateNumberOfMessagesVisible({
          period: Duration.minutes(1),
          statistic: cloudwatch.Stats.MAXIMUM,
        }),
        {
          threshold: 1,
          alarmDescription:
            'An ended execution could not be handled by the safety net; its task may have no result. RUNBOOK: SafetyNetDeadLetterQueueNotEmpty.',
        },
      );
    }

    alarm(
      'WorkflowExecutionsFailed',
      props.stateMachine.metricFailed({ period: FIVE_MINUTES, statistic: cloudwatch.Stats.SUM }),
      {
        threshold: 1,
        alarmDescription: 'A create-order execution failed. RUNBOOK: WorkflowExecutionsFailed.',
      },
    );
    alarm(
      'WorkflowExecutionsTimedOut',
      props.stateMachine.metricTimedOut({ period: FIVE_MINUTES, statistic: cloudwatch.Stats.SUM }),
      {
        threshold: 1,
        alarmDescription: 'A create-order execution hit its 600 s hard limit. RUNBOOK: WorkflowExecutionsTimedOut.',
      },
    );

    for (const [name, fn] of Object.entries(props.functions)) {
      alarm(`${name}Errors`, fn.metricErrors({ period: FIVE_MINUTES, statistic: cloudwatch.Stats.SUM }), {
        threshold: 1,
        alarmDescription: `Function ${name} threw. RUNBOOK: FunctionErrors.`,
      });
      alarm(`${name}Throttles`, fn.metricThrottles({ period: FIVE_MINUTES, statistic: cloudwatch.Stats.SUM }), {
        threshold: 1,
        alarmDescription: `Function ${name} was throttled. RUNBOOK: FunctionThrottles.`,
      });
    }

    alarm('Api5xx', props.httpApi.metricServerError({ period: FIVE_MINUTES, statistic: cloudwatch.Stats.SUM }), {
      threshold: props.api5xxThreshold ?? 1,
      alarmDescription: 'The HTTP API answered 5xx. RUNBOOK: Api5xx.',
    });

    alarm('MarketplaceThrottled', relayMetric(MetricName.MarketplaceErrors, undefined, { ResultCode: '5' }), {
      threshold: code5Threshold,
      alarmDescription: 'The marketplace answered code 5 (too many requests) too often. RUNBOOK: MarketplaceThrottled.',
    });

    alarm(
      'CallbackFailureRate',
      new cloudwatch.MathExpression({
        // FILL: a period with deliveries but no failures has no CallbackFailures datapoint at all.
        expression:
          'IF(FILL(failures, 0) + FILL(deliveries, 0) > 0, FILL(failures, 0) / (FILL(failures, 0) + FILL(deliveries, 0)), 0)',
        usingMetrics: {
          failures: relayMetric(MetricName.CallbackFailures),
          deliveries: relayMetric(MetricName.CallbackDeliveries),
        },
        label: 'Callback failure rate',
        period: FIVE_MINUTES,
      }),
      {
        threshold: callbackRate,
        comparisonOperator: cloudwatch.ComparisonOperator.GREATER_THAN_THRESHOLD,
        evaluationPeriods: 3,
        datapointsToAlarm: 2,
        alarmDescription: 'Too many callback POSTs fail. RUNBOOK: CallbackFailureRate.',
      },
    );

    if (props.fleetWatch) for (const spec of fleetWatchAlarms()) alarm(spec.id, spec.metric, spec.options);
    const spending = spendAlarm(props.spendLimitUsdPerDay);
    if (spending) alarm(spending.id, spending.metric, spending.options);

    this.dashboard = new cloudwatch.Dashboard(this, 'Dashboard', {
      defaultInterval: Duration.hours(6),
      widgets: [
        [
          new cloudwatch.TextWidget({
            markdown:
              '# GPU order relay\nAccepted → placed → ready, or failed. Alarms on the right; runbook in docs/operations.md.',
            width: 12,
            height: 6,
          }),
          new cloudwatch.AlarmStatusWidget({
            title: 'Alarms',
            alarms: Object.values(this.alarms),
            width: 12,
            height: 6,
          }),
        ],
        [
          graph('Tasks: accepted → placed → ready / failed', 12, [
            relayTotal(MetricName.TasksAccepted, 'Accepted'),
            relayTotal(MetricName.OrdersPlaced, 'Orders placed'),
            relayTotal(MetricName.OrdersReady, 'Orders ready'),
            relayTotal(MetricName.OrderTimeouts, 'Order timeouts'),
            relayTotal(MetricName.TasksFailed, 'Tasks failed'),
          ]),
          graph('Tasks accepted by kind', 12, [relayBreakdown(MetricName.TasksAccepted, 'Accepted')]),
        ],
        [
          graph(
            'API latency (ms)',
            8,
            p50AndP99((options) => props.httpApi.metricLatency(options)),
          ),
          graph(
            'Workflow execution time (ms)',
            8,
            p50AndP99((options) => props.stateMachine.metricTime(options)),
          ),
          graph(
            'API requests and errors',
            8,
            [
              props.httpApi.metricCount({ statistic: cloudwatch.Stats.SUM, period: FIVE_MINUTES, label: 'Requests' }),
              props.httpApi.metricClientError({ statistic: cloudwatch.Stats.SUM, period: FIVE_MINUTES, label: '4xx' }),
              props.httpApi.metricServerError({ statistic: cloudwatch.Stats.SUM, period: FIVE_MINUTES, label: '5xx' }),
            ],
            [
              relayTotal(MetricName.SignatureRejected, 'Signature rejected'),
              relayTotal(MetricName.RateLimited, 'Rate limited'),
            ],
          ),
        ],
        [
          graph('Marketplace errors by result code', 8, [
            relayBreakdown(MetricName.MarketplaceErrors, 'Marketplace errors'),
          ]),
          graph('Callback and chat delivery', 8, [
            relayTotal(MetricName.CallbackDeliveries, 'Callbacks delivered'),
            relayTotal(MetricName.CallbackFailures, 'Callbacks failed'),
            relayTotal(MetricName.ChatFailures, 'Chat failures'),
          ]),
          graph('Dead-letter queue depth', 8, [
            props.deadLetterQueue.metricApproximateNumberOfMessagesVisible({
              period: Duration.minutes(1),
              statistic: cloudwatch.Stats.MAXIMUM,
              label: 'Messages in DLQ',
            }),
          ]),
        ],
        ...(props.fleetWatch ? [[fleetWatchWidget()]] : []),
        [spendWidget()],
      ],
    });
  }

  /** Console link to the dashboard. */
  public get dashboardUrl(): string {
    const region = Stack.of(this).region;
    return `https://${region}.console.aws.amazon.com/cloudwatch/home?region=${region}#dashboards:name=${this.dashboard.dashboardName}`;
  }
}
