/**
 * Alarms reach the operator (issue 21 item 3): every alarm action and OK action of the synthesized
 * stack is followed to its SNS topic, the topic's policy and, when the topic is encrypted, its KMS key
 * policy; each must let this account's CloudWatch alarms publish (and use the key). The walk fails if
 * it found no alarm, and a stack with the bare `enforceSSL` topic shows that it can fail.
 */
import { App, Stack, type CfnElement } from 'aws-cdk-lib';
import { Template } from 'aws-cdk-lib/assertions';
import * as cloudwatch from 'aws-cdk-lib/aws-cloudwatch';
import * as actions from 'aws-cdk-lib/aws-cloudwatch-actions';
import * as sns from 'aws-cdk-lib/aws-sns';
import { relayConfig } from '../../lib/config';
import { JOB_AGE_ALARM_SECONDS } from '../../lib/constructs/monitoring';
import { RelayStack } from '../../lib/relay-stack';
import { HARD_TIME_LIMIT_SECONDS } from '../../contract/limits';

type Resource = { Type: string; Properties?: Record<string, unknown> };
type Statement = {
  Effect: string;
  Principal?: unknown;
  Action: string | string[];
  Resource?: unknown;
  Condition?: Record<string, Record<string, unknown>>;
};

const ACCOUNT = '111111111111';
const REGION = 'eu-west-1';
const asArray = <T>(value: T | T[] | undefined): T[] =>
  value === undefined ? [] : Array.isArray(value) ? value : [value];
const refOf = (value: unknown): string | undefined => (value as { Ref?: string } | undefined)?.Ref;
const getAttOf = (value: unknown): string | undefined =>
  (value as { 'Fn::GetAtt'?: [string, string] } | undefined)?.['Fn::GetAtt']?.[0];

/** The alarm ARN pattern as the template states it, tokens flattened (`arn:<partition>:cloudwatch:...`). */
const flatten = (value: unknown): string => {
  if (typeof value === 'string') return value;
  const join = (value as { 'Fn::Join'?: [string, unknown[]] })['Fn::Join'];
  if (join) return join[1].map(flatten).join(join[0]);
  const ref = refOf(value);
  if (ref) return `<${ref}>`;
  return JSON.stringify(value);
};

/** Whether the statement allows the CloudWatch service every one of `needed`, limited to this account's alarms. */
const allowsCloudWatch = (statement: Statement, needed: readonly string[]): boolean => {
  if (statement.Effect !== 'Allow') return false;
  const services = asArray((statement.Principal as { Service?: string | string[] } | undefined)?.Service);
  if (!services.includes('cloudwatch.amazonaws.com')) return false;
  const granted = asArray(statement.Action);
  const covers = (action: string) =>
    granted.some((g) => g === action || (g.endsWith('*') && action.startsWith(g.slice(0, -1))));
  if (!needed.every(covers)) return false;
  const account = flatten(statement.Condition?.StringEquals?.['aws:SourceAccount']);
  const sourceArn = flatten(statement.Condition?.ArnLike?.['aws:SourceArn']);
  // At least one confused-deputy condition naming this account (and, for the ARN, CloudWatch alarms).
  return account === ACCOUNT || /^arn:[^:]+:cloudwatch:[^:]+:111111111111:alarm:\*$/.test(sourceArn);
};

/**
 * Problems found walking every alarm → topic → topic policy and key policy; `checked` is how many
 * (alarm, action) pairs were walked.
 */
export const alarmDeliveryProblems = (template: Template): { problems: string[]; alarms: number; checked: number } => {
  const resources = template.toJSON().Resources as Record<string, Resource>;
  const problems: string[] = [];
  let alarms = 0;
  let checked = 0;
  for (const [alarmId, alarm] of Object.entries(resources)) {
    if (alarm.Type !== 'AWS::CloudWatch::Alarm') continue;
    alarms += 1;
    const targets = [...asArray(alarm.Properties?.AlarmActions), ...asArray(alarm.Properties?.OKActions)];
    if (asArray(alarm.Properties?.AlarmActions).length === 0) problems.push(`${alarmId}: no alarm action`);
    if (asArray(alarm.Properties?.OKActions).length === 0) problems.push(`${alarmId}: no OK action`);
    for (const target of targets) {
      checked += 1;
      const topicId = refOf(target);
      const topic = topicId ? resources[topicId] : undefined;
      if (!topicId || topic?.Type !== 'AWS::SNS::Topic') {
        problems.push(`${alarmId}: action ${JSON.stringify(target)} is not a topic of this stack`);
        continue;
      }
      const policies = Object.values(resources).filter(
        (r) => r.Type === 'AWS::SNS::TopicPolicy' && asArray(r.Properties?.Topics).some((t) => refOf(t) === topicId),
      );
      const topicStatements = policies.flatMap(
        (p) => (p.Properties?.PolicyDocument as { Statement: Statement[] }).Statement,
      );
      // No policy at all would leave SNS's default (owner account only, which CloudWatch alarms use);
      // a policy replaces that default, so it must allow CloudWatch itself.
      if (
        policies.length > 0 &&
        !topicStatements.some(
          (s) => allowsCloudWatch(s, ['sns:Publish']) && asArray(s.Resource).some((r) => refOf(r) === topicId),
        )
      ) {
        problems.push(
          `${alarmId} → ${topicId}: the topic policy does not allow cloudwatch.amazonaws.com sns:Publish for this account's alarms`,
        );
      }
      const keyRef = topic.Properties?.KmsMasterKeyId;
      if (keyRef === undefined) continue;
      const keyId = getAttOf(keyRef) ?? refOf(keyRef);
      const key = keyId ? resources[keyId] : undefined;
      if (!keyId || key?.Type !== 'AWS::KMS::Key') {
        problems.push(
          `${alarmId} → ${topicId}: encrypted with ${JSON.stringify(keyRef)}, a key whose policy CloudWatch cannot be granted (e.g. aws/sns)`,
        );
        continue;
      }
      const keyStatements = (key.Properties?.KeyPolicy as { Statement: Statement[] }).Statement;
      if (!keyStatements.some((s) => allowsCloudWatch(s, ['kms:Decrypt', 'kms:GenerateDataKey']))) {
        problems.push(
          `${alarmId} → ${topicId} → ${keyId}: the key policy does not let CloudWatch use the key (kms:Decrypt, kms:GenerateDataKey*)`,
        );
      }
    }
  }
  return { problems, alarms, checked };
};

describe('Alarm delivery: every alarm can reach the operator', () => {
  let stack: RelayStack;
  let template: Template;

  beforeAll(() => {
    const app = new App({ context: { 'aws:cdk:bundling-stacks': [] } });
    const config = relayConfig({ alarmEmail: 'ops@example.com' });
    stack = new RelayStack(app, 'Relay', { config, env: { account: ACCOUNT, region: REGION } });
    template = Template.fromStack(stack);
  });

  it('walks every alarm action and OK action to a topic policy and key policy that let CloudWatch publish', () => {
    const { problems, alarms, checked } = alarmDeliveryProblems(template);
    expect(problems).toEqual([]);
    // It checked something: every alarm, each with an alarm and an OK action.
    expect(alarms).toBeGreaterThan(20);
    expect(checked).toBeGreaterThanOrEqual(2 * alarms);
  });

  it('keeps the TLS-only Deny on the topic beside the Allow', () => {
    const [policy] = Object.values(template.findResources('AWS::SNS::TopicPolicy')) as Resource[];
    const statements = (policy.Properties?.PolicyDocument as { Statement: Statement[] }).Statement;
    expect(statements).toEqual(
      expect.arrayContaining([
        expect.objectContaining({ Effect: 'Deny', Condition: { Bool: { 'aws:SecureTransport': 'false' } } }),
      ]),
    );
  });

  it('alarms on the age of the oldest queued job at the hard time limit, with an OK action', () => {
    expect(JOB_AGE_ALARM_SECONDS).toBe(HARD_TIME_LIMIT_SECONDS);
    const alarms = Object.values(
      template.findResources('AWS::CloudWatch::Alarm', {
        Properties: { MetricName: 'ApproximateAgeOfOldestMessage', Namespace: 'AWS/SQS' },
      }),
    ) as Resource[];
    expect(alarms).toHaveLength(1);
    const [alarm] = alarms;
    expect(alarm.Properties).toMatchObject({
      Threshold: JOB_AGE_ALARM_SECONDS,
      ComparisonOperator: 'GreaterThanOrEqualToThreshold',
      Statistic: 'Maximum',
    });
    // On the job queue, not on a dead-letter queue.
    const queueId = getAttOf((alarm.Properties?.Dimensions as { Value: unknown }[])[0].Value);
    expect(queueId).toBe(stack.getLogicalId(stack.jobQueue.queue.node.defaultChild as CfnElement));
    expect(asArray(alarm.Properties?.OKActions)).toHaveLength(1);
  });

  it('finds the failure in a stack whose enforceSSL topic lacks the CloudWatch grant (the walk can fail)', () => {
    const stack = new Stack(new App(), 'Bare', { env: { account: ACCOUNT, region: REGION } });
    const topic = new sns.Topic(stack, 'Topic', { enforceSSL: true });
    const alarm = new cloudwatch.Alarm(stack, 'Alarm', {
      metric: new cloudwatch.Metric({ namespace: 'X', metricName: 'Y' }),
      threshold: 1,
      evaluationPeriods: 1,
    });
    alarm.addAlarmAction(new actions.SnsAction(topic));
    const { problems, alarms } = alarmDeliveryProblems(Template.fromStack(stack));
    expect(alarms).toBe(1);
    expect(problems).toEqual([
      'Alarm7103F465: no OK action',
      expect.stringContaining('the topic policy does not allow cloudwatch.amazonaws.com sns:Publish'),
    ]);
  });
});
