/**
 * FleetWatch on its own (schedule, function, grants, env) and its alarms and widget through Monitoring,
 * around a stub state machine and queue. The function points at a stand-in handler.
 */
import { App, AspectPriority, Aspects, Stack } from 'aws-cdk-lib';
import { Match, Template } from 'aws-cdk-lib/assertions';
import * as apigwv2 from 'aws-cdk-lib/aws-apigatewayv2';
import * as sfn from 'aws-cdk-lib/aws-stepfunctions';
import * as sqs from 'aws-cdk-lib/aws-sqs';
import { FleetWatch, watchScheduleRate } from '../../lib/constructs/fleet-watch';
import { Monitoring } from '../../lib/constructs/monitoring';
import { RelaySecrets } from '../../lib/constructs/relay-secrets';
import { RelayTable } from '../../lib/constructs/relay-table';
import { AcknowledgeUnavoidableWildcards } from '../../lib/relay-stack';
import { WATCH_TIMEOUT_SECONDS } from '../../contract/resources';
import { actionsOf, functionProps, logicalIdOf, resourcesFor, unsuppressedNagErrors } from './helpers';

const STUB_ENTRY = 'test/infra/fixtures/noop-handler.ts';

const build = (intervalSeconds: number) => {
  const app = new App({ context: { 'aws:cdk:bundling-stacks': [] } });
  const stack = new Stack(app, 'Watch', { env: { account: '111111111111', region: 'eu-west-1' } });
  const { table } = new RelayTable(stack, 'RelayTable', { deletionProtection: false });
  const secrets = new RelaySecrets(stack, 'Secrets');
  const watch = new FleetWatch(stack, 'FleetWatch', {
    table,
    secrets,
    intervalSeconds,
    entry: STUB_ENTRY,
    environment: {
      MARKETPLACE_URL: 'https://m.example',
      WATCH_INTERVAL_SECONDS: String(intervalSeconds),
      LEASE_WARNING_SECONDS: '600',
    },
  });
  return { stack, watch, table, secrets };
};

describe('Construct: FleetWatch', () => {
  let template: Template;
  let stack: Stack;

  beforeAll(() => {
    // Prepare
    const parts = build(120);
    stack = parts.stack;
    const stateMachine = new sfn.StateMachine(stack, 'Workflow', {
      definitionBody: sfn.DefinitionBody.fromChainable(new sfn.Pass(stack, 'Noop')),
    });
    const deadLetterQueue = new sqs.Queue(stack, 'Dlq', { enforceSSL: true });
    const httpApi = new apigwv2.HttpApi(stack, 'Api');
    new Monitoring(stack, 'Monitoring', {
      deadLetterQueue,
      stateMachine,
      httpApi,
      functions: {},
      fleetWatch: parts.watch.fn,
    });
    // As RelayStack does: X-Ray's `Resource: *` is acknowledged, any other wildcard is not.
    Aspects.of(stack).add(new AcknowledgeUnavoidableWildcards(), { priority: AspectPriority.READONLY });
    // Act
    template = Template.fromStack(stack);
  });

  it('runs the function on an EventBridge schedule of WATCH_INTERVAL_SECONDS, without retries', () => {
    const fnId = logicalIdOf(template, 'AWS::Lambda::Function', 'FleetWatchFunction');
    template.hasResourceProperties('AWS::Events::Rule', {
      ScheduleExpression: 'rate(2 minutes)',
      State: 'ENABLED',
      Targets: [Match.objectLike({ Arn: { 'Fn::GetAtt': [fnId, 'Arn'] }, RetryPolicy: { MaximumRetryAttempts: 0 } })],
    });
    template.hasResourceProperties('AWS::Lambda::Permission', {
      Principal: 'events.amazonaws.com',
      FunctionName: { 'Fn::GetAtt': [fnId, 'Arn'] },
    });
    template.hasResourceProperties('AWS::Lambda::EventInvokeConfig', { MaximumRetryAttempts: 0 });
  });

  it('gives the function the sweep timeout, the table, the settings and only its secrets ARNs', () => {
    const props = functionProps(template, 'FleetWatchFunction');
    expect(props.Timeout).toBe(WATCH_TIMEOUT_SECONDS);
    const variables = (props.Environment as { Variables: Record<string, unknown> }).Variables;
    expect(variables).toMatchObject({
      WATCH_INTERVAL_SECONDS: '120',
      LEASE_WARNING_SECONDS: '600',
      MARKETPLACE_URL: 'https://m.example',
    });
    expect(variables.TABLE_NAME).toEqual({ Ref: logicalIdOf(template, 'AWS::DynamoDB::Table', 'RelayTable') });
    // Events are signed with the callback signing secret; the webhook secret (requests) is not its to read.
    expect(
      Object.keys(variables)
        .filter((k) => k.endsWith('_ARN'))
        .sort(),
    ).toEqual([
      'CALLBACK_SIGNING_SECRET_ARN',
      // The data key that seals a replaceable task's kept env (issue 29 §6).
      'CALLER_KEYS_SECRET_ARN',
      'CHAT_WEBHOOKS_SECRET_ARN',
      'MARKETPLACE_API_KEY_ARN',
    ]);
  });

  it('grants item actions on the table (BatchGetItem for the due index), Query on the waiting index only, and reads of its four secrets only', () => {
    const actions = [...actionsOf(template, 'FleetWatchFunction')];
    const dynamo = actions.filter((a) => a.startsWith('dynamodb:')).sort();
    expect(dynamo).toEqual([
      'dynamodb:BatchGetItem',
      'dynamodb:DeleteItem',
      'dynamodb:GetItem',
      'dynamodb:PutItem',
      'dynamodb:Query',
      'dynamodb:UpdateItem',
    ]);
    expect(actions).not.toEqual(expect.arrayContaining(['dynamodb:Scan']));
    // Query: the waiting queue's index (issue 29 §5), never the table.
    expect(resourcesFor(template, 'FleetWatchFunction', 'dynamodb:Query').join()).toContain('/index/waiting');
    const tableId = logicalIdOf(template, 'AWS::DynamoDB::Table', 'RelayTable');
    expect(resourcesFor(template, 'FleetWatchFunction', 'dynamodb:BatchGetItem').join()).toContain(tableId);
    const secretReads = resourcesFor(template, 'FleetWatchFunction', 'secretsmanager:GetSecretValue').join();
    for (const name of [
      'SecretsMarketplaceApiKey',
      'SecretsCallbackSigningSecret',
      'SecretsChatWebhooks',
      'SecretsCallerKeysSecret',
    ])
      expect(secretReads).toContain(name);
    expect(secretReads).not.toContain('SecretsSlackSigningSecret');
    expect(secretReads).not.toContain('SecretsWebhookSecret');
  });

  it('alarms on sweeps that threw and on failed lease cancellations, ≥ 1 per 5 minutes', () => {
    for (const [runbook, metricName] of [
      ['WatchErrors', 'WatchErrors'],
      ['LeaseCancelFailures', 'LeaseCancelFailures'],
    ]) {
      template.hasResourceProperties('AWS::CloudWatch::Alarm', {
        AlarmDescription: Match.stringLikeRegexp(`RUNBOOK: ${runbook}`),
        MetricName: metricName,
        Namespace: 'GpuRelay',
        Dimensions: [{ Name: 'service', Value: 'gpu-relay' }],
        Statistic: 'Sum',
        Period: 300,
        Threshold: 1,
        ComparisonOperator: 'GreaterThanOrEqualToThreshold',
        TreatMissingData: 'notBreaching',
        AlarmActions: [{ Ref: logicalIdOf(template, 'AWS::SNS::Topic', 'MonitoringAlarmTopic') }],
      });
    }
  });

  it('puts the fleet-watch widget on the dashboard', () => {
    const dashboard = Object.values(template.findResources('AWS::CloudWatch::Dashboard'))[0] as {
      Properties: { DashboardBody: unknown };
    };
    const body = JSON.stringify(stack.resolve(dashboard.Properties.DashboardBody));
    expect(body).toContain('Fleet watch: leases and order status');
    for (const name of [
      'LeasesDue',
      'LeasesCancelled',
      'LeaseCancelFailures',
      'OrderStatusChanges',
      'LifecycleEvents',
      'WatchTableReads',
    ])
      expect(body).toContain(name);
  });

  it('raises no cdk-nag finding of its own (beyond the one RelayStack acknowledges stack-wide)', () => {
    const stackWide =
      /^AwsSolutions-IAM4\[Policy::arn:<AWS::Partition>:iam::aws:policy\/service-role\/AWSLambdaBasicExecutionRole\]$/;
    const own = unsuppressedNagErrors(stack)
      .filter((v) => !stackWide.test(v.ruleName))
      .flatMap((v) => v.violatingResources.map((r) => `${v.ruleName}: ${r.resourceLogicalId ?? r.constructPath ?? ''}`))
      .filter((finding) => /FleetWatch/.test(finding));
    expect(own).toEqual([]);
  });
});

describe('Function: watchScheduleRate', () => {
  it('accepts whole minutes and refuses what EventBridge cannot schedule, with the reason', () => {
    expect(watchScheduleRate(60).toMinutes()).toBe(1);
    expect(watchScheduleRate(300).toMinutes()).toBe(5);
    for (const bad of [1, 30, 59, 90, 0, -60, 60.5]) {
      expect(() => watchScheduleRate(bad)).toThrow(/whole number of minutes in AWS .*at most once a minute; got/);
    }
  });

  it('fails synthesis of a watch configured below a minute', () => {
    expect(() => build(30)).toThrow(/WATCH_INTERVAL_SECONDS.*got 30\. Shorter intervals work only locally/);
  });
});
