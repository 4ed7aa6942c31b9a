/**
 * The relay's custom metrics as its alarms and dashboard read them (namespace and `service`
 * dimension from contract/telemetry.ts, as Powertools emits them), and the dashboard's graphs: shared
 * by the Monitoring construct (lib/constructs/monitoring.ts) and the fleet watch's alarms and widget
 * (lib/constructs/fleet-watch.ts).
 */
import { Duration } from 'aws-cdk-lib';
import * as cloudwatch from 'aws-cdk-lib/aws-cloudwatch';
import { METRICS_NAMESPACE, SERVICE_NAME } from '../../contract/telemetry';

export const FIVE_MINUTES = Duration.minutes(5);

/**
 * A custom relay metric, summed over 5 minutes: namespace GpuRelay, the `service` dimension always
 * present (`extraDimensions` besides). Alarms take it unlabelled (a plain metric alarm).
 */
export const relayMetric = (
  metricName: string,
  label?: string,
  extraDimensions: Record<string, string> = {},
): cloudwatch.Metric =>
  new cloudwatch.Metric({
    namespace: METRICS_NAMESPACE,
    metricName,
    dimensionsMap: { service: SERVICE_NAME, ...extraDimensions },
    statistic: cloudwatch.Stats.SUM,
    period: FIVE_MINUTES,
    label,
  });

/** A dashboard graph: its title, its width (of 24 columns), its lines on the left axis and any on the right. */
export const graph = (
  title: string,
  width: number,
  left: cloudwatch.IMetric[],
  right?: cloudwatch.IMetric[],
): cloudwatch.GraphWidget => new cloudwatch.GraphWidget({ title, width, left, ...(right ? { right } : {}) });
