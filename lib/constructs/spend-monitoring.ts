/**
 * Spending (issue 24) on the dashboard and in the alarms: SpendReservedUsd / SpendSettledUsd per
 * caller key (dimension `key`), and SpendNearDailyLimit when the relay's used total of the UTC day
 * (SpendUsedTodayUsd, emitted after every reservation) reaches 80 % of SPEND_LIMIT_USD_PER_DAY.
 */
import { Duration } from 'aws-cdk-lib';
import * as cloudwatch from 'aws-cdk-lib/aws-cloudwatch';
import { METRICS_NAMESPACE, MetricName, SERVICE_NAME } from '../../contract/telemetry';

/** Share of the daily limit that raises SpendNearDailyLimit. */
export const SPEND_ALARM_SHARE = 0.8;

const perKey = (metricName: string, label: string): cloudwatch.MathExpression =>
  new cloudwatch.MathExpression({
    expression: `SEARCH('{${METRICS_NAMESPACE},key,service} MetricName="${metricName}"', 'Sum', 3600)`,
    label,
    period: Duration.hours(1),
  });

/** The alarm at 80 % of the daily limit (none without a limit). */
export const spendAlarm = (
  limitUsdPerDay: number | undefined,
):
  | { id: string; metric: cloudwatch.IMetric; options: Omit<cloudwatch.CreateAlarmOptions, 'evaluationPeriods'> }
  | undefined =>
  limitUsdPerDay === undefined
    ? undefined
    : {
        id: 'SpendNearDailyLimit',
        metric: new cloudwatch.Metric({
          namespace: METRICS_NAMESPACE,
          metricName: MetricName.SpendUsedTodayUsd,
          dimensionsMap: { service: SERVICE_NAME },
          statistic: cloudwatch.Stats.MAXIMUM,
          period: Duration.minutes(5),
        }),
        options: {
          threshold: Math.round(limitUsdPerDay * SPEND_ALARM_SHARE * 100) / 100,
          alarmDescription: `Today's spending (reserved + settled, UTC day) reached ${SPEND_ALARM_SHARE * 100} % of SPEND_LIMIT_USD_PER_DAY ($${limitUsdPerDay}). RUNBOOK: SpendNearDailyLimit (docs/operations.md).`,
        },
      };

/** Reserved and settled USD per key, per hour. */
export const spendWidget = (): cloudwatch.GraphWidget =>
  new cloudwatch.GraphWidget({
    title: 'Spending (USD per hour, by caller key): reserved / settled',
    width: 24,
    left: [perKey(MetricName.SpendReservedUsd, 'Reserved'), perKey(MetricName.SpendSettledUsd, 'Settled')],
  });
