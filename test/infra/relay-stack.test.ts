/** The composed RelayStack: one synth (bundling skipped), then assertions on the template and cdk-nag. */
import { App, type Stack } from 'aws-cdk-lib';
import { Match, Template } from 'aws-cdk-lib/assertions';
import * as iam from 'aws-cdk-lib/aws-iam';
import { relayConfig } from '../../lib/config';
import { RelayStack } from '../../lib/relay-stack';
import { JOB_QUEUE } from '../../contract/resources';
import { ROUTES } from '../../contract/routes';
import { LAMBDA_NODE_RUNTIME } from '../../contract/runtime';
import { acknowledgements, actionsOf, logicalIdOf, unsuppressedNagErrors } from './helpers';

type Resource = { Type: string; Properties: Record<string, unknown> };

/** The state machine's ASL with every CloudFormation token replaced by a placeholder ARN. */
const aslOf = (template: Template): { States: Record<string, Record<string, unknown>>; TimeoutSeconds?: number } => {
  const [machine] = Object.values(template.findResources('AWS::StepFunctions::StateMachine')) as Resource[];
  const definition = machine.Properties.DefinitionString as string | { 'Fn::Join': [string, unknown[]] };
  const text =
    typeof definition === 'string'
      ? definition
      : definition['Fn::Join'][1]
          .map((part) =>
            typeof part === 'string' ? part : 'arn:aws:lambda:us-east-1:111111111111:function:placeholder',
          )
          .join('');
  return JSON.parse(text);
};

describe('RelayStack', () => {
  let stack: Stack;
  let template: Template;

  beforeAll(() => {
    // Prepare
    const app = new App({ context: { 'aws:cdk:bundling-stacks': [] } });
    const config = relayConfig({
      alarmEmail: 'ops@example.com',
      apiThrottle: { rateLimit: 20, burstLimit: 40 },
      logRetentionDays: 14,
    });
    // Act
    stack = new RelayStack(app, 'Relay', { config, env: { account: '111111111111', region: 'eu-west-1' } });
    template = Template.fromStack(stack);
  });

  describe('functions', () => {
    it('runs every function on the Lambda Node.js runtime of contract/runtime.ts (nodejs24.x), arm64, with active tracing', () => {
      const functions = Object.values(template.findResources('AWS::Lambda::Function')) as Resource[];
      expect(functions.length).toBeGreaterThanOrEqual(ROUTES.length + 8);
      for (const fn of functions) {
        expect(fn.Properties).toMatchObject({
          Runtime: LAMBDA_NODE_RUNTIME,
          Architectures: ['arm64'],
          TracingConfig: { Mode: 'Active' },
        });
      }
    });

    it('sets a retention on every log group', () => {
      const groups = Object.values(template.findResources('AWS::Logs::LogGroup')) as Resource[];
      expect(groups.length).toBeGreaterThan(ROUTES.length);
      for (const group of groups) expect(group.Properties.RetentionInDays).toBe(14);
    });

    it('gives create-order StartExecution and no SendMessage, cancel-order the reverse', () => {
      const createOrder = actionsOf(template, 'WebhookApiCreateOrderFunction');
      expect(createOrder).toContain('states:StartExecution');
      expect(createOrder).not.toContain('sqs:SendMessage');
      const cancelOrder = actionsOf(template, 'WebhookApiCancelOrderFunction');
      expect(cancelOrder).toContain('sqs:SendMessage');
      expect(cancelOrder).not.toContain('states:StartExecution');
    });
  });

  describe('API', () => {
    it.each(ROUTES.map((r) => [`${r.method} ${r.path}`]))('has route %s', (routeKey) => {
      template.hasResourceProperties('AWS::ApiGatewayV2::Route', { RouteKey: routeKey });
    });

    it('throttles the $default stage from config', () => {
      template.hasResourceProperties('AWS::ApiGatewayV2::Stage', {
        StageName: '$default',
        DefaultRouteSettings: { ThrottlingRateLimit: 20, ThrottlingBurstLimit: 40 },
      });
    });
  });

  describe('workflow', () => {
    it('retries every task 3 times from 2 s with backoff 2 and catches failures', () => {
      const asl = aslOf(template);
      const taskStates = Object.entries(asl.States).filter(([, state]) => state.Type === 'Task');
      expect(taskStates.length).toBeGreaterThanOrEqual(6);
      for (const [name, state] of taskStates) {
        expect({ name, retry: state.Retry }).toEqual({
          name,
          retry: expect.arrayContaining([
            expect.objectContaining({ IntervalSeconds: 2, MaxAttempts: 3, BackoffRate: 2 }),
          ]),
        });
        if (name !== 'ReportResult') expect({ name, catch: state.Catch }).toEqual({ name, catch: expect.any(Array) });
      }
    });

    it('stops executions at the 600 s hard limit', () => {
      expect(aslOf(template).TimeoutSeconds).toBe(600);
    });

    it('sends executions ending TIMED_OUT, FAILED or ABORTED to the safety net', () => {
      template.hasResourceProperties('AWS::Events::Rule', {
        EventPattern: Match.objectLike({
          source: ['aws.states'],
          detail: Match.objectLike({ status: Match.arrayEquals(['TIMED_OUT', 'FAILED', 'ABORTED']) }),
        }),
        Targets: Match.arrayWith([Match.objectLike({ Arn: Match.anyValue() })]),
      });
    });
  });

  describe('job queue', () => {
    it('keeps messages invisible for at least 6 worker timeouts and redrives to the DLQ', () => {
      const queues = Object.values(template.findResources('AWS::SQS::Queue')) as Resource[];
      const main = queues.find((q) => q.Properties.RedrivePolicy !== undefined);
      expect(main).toBeDefined();
      const [mapping] = Object.values(template.findResources('AWS::Lambda::EventSourceMapping')) as Resource[];
      const workerId = (mapping.Properties.FunctionName as { Ref: string }).Ref;
      const workerTimeout = Number((template.toJSON().Resources[workerId] as Resource).Properties.Timeout);
      expect(workerTimeout).toBeGreaterThan(0);
      expect(Number(main?.Properties.VisibilityTimeout)).toBeGreaterThanOrEqual(6 * workerTimeout);
      expect(main?.Properties.RedrivePolicy).toEqual({
        deadLetterTargetArn: expect.anything(),
        maxReceiveCount: JOB_QUEUE.maxReceiveCount,
      });
    });

    it('reports partial batch failures with bounded concurrency', () => {
      template.hasResourceProperties('AWS::Lambda::EventSourceMapping', {
        FunctionResponseTypes: ['ReportBatchItemFailures'],
        ScalingConfig: { MaximumConcurrency: Match.anyValue() },
      });
    });
  });

  describe('monitoring', () => {
    it('alarms on errors and throttles of every function', () => {
      const functionCount = Object.keys(template.findResources('AWS::Lambda::Function')).length;
      for (const metricName of ['Errors', 'Throttles']) {
        expect(
          Object.keys(
            template.findResources('AWS::CloudWatch::Alarm', {
              Properties: { MetricName: metricName, Namespace: 'AWS/Lambda' },
            }),
          ),
        ).toHaveLength(functionCount);
      }
    });

    it.each([
      ['DLQ not empty', { MetricName: 'ApproximateNumberOfMessagesVisible', Namespace: 'AWS/SQS' }],
      ['executions failed', { MetricName: 'ExecutionsFailed', Namespace: 'AWS/States' }],
      ['executions timed out', { MetricName: 'ExecutionsTimedOut', Namespace: 'AWS/States' }],
      ['API 5xx', { MetricName: '5xx', Namespace: 'AWS/ApiGateway' }],
      ['marketplace code 5', { MetricName: 'MarketplaceErrors', Namespace: 'GpuRelay' }],
    ])('sends the %s alarm to the topic', (_name, props) => {
      template.hasResourceProperties('AWS::CloudWatch::Alarm', {
        ...props,
        AlarmActions: [{ Ref: Match.stringLikeRegexp('^MonitoringAlarmTopic') }],
      });
    });

    it('sends the callback failure rate alarm to the topic', () => {
      template.hasResourceProperties('AWS::CloudWatch::Alarm', {
        Metrics: Match.arrayWith([Match.objectLike({ Expression: Match.stringLikeRegexp('failures') })]),
        AlarmActions: [{ Ref: Match.stringLikeRegexp('^MonitoringAlarmTopic') }],
      });
    });

    it('subscribes the configured e-mail to the alarm topic', () => {
      template.hasResourceProperties('AWS::SNS::Subscription', { Protocol: 'email', Endpoint: 'ops@example.com' });
    });

    it('has one dashboard', () => {
      template.resourceCountIs('AWS::CloudWatch::Dashboard', 1);
    });
  });

  it('outputs the API URL, every secret ARN and name, the dashboard URL and the alarm topic', () => {
    const outputs = Object.keys(template.findOutputs('*'));
    expect(outputs).toEqual(
      expect.arrayContaining([
        'ApiUrl',
        'DashboardUrl',
        'AlarmTopicArn',
        ...[
          'WebhookSecret',
          'MarketplaceApiKey',
          'ChatWebhooks',
          'SlackSigningSecret',
          'CallbackSigningSecret',
          'SshPasswordSecret',
        ].flatMap((s) => [`${s}Arn`, `${s}Name`]),
      ]),
    );
  });

  it('generates the callback signing secret as 48 letters and digits (base64 of a 36-byte key), retained like the others', () => {
    template.hasResource('AWS::SecretsManager::Secret', {
      DeletionPolicy: 'Retain',
      Properties: Match.objectLike({
        GenerateSecretString: {
          PasswordLength: 48,
          ExcludePunctuation: true,
          IncludeSpace: false,
          RequireEachIncludedType: false,
        },
      }),
    });
  });

  it('lets only the functions that deliver callbacks or events read the callback signing secret, and none of them the webhook secret', () => {
    const policies = template.findResources('AWS::IAM::Policy');
    const callbackId = logicalIdOf(template, 'AWS::SecretsManager::Secret', 'SecretsCallbackSigningSecret');
    const webhookId = logicalIdOf(template, 'AWS::SecretsManager::Secret', 'SecretsWebhookSecret');
    const readers = (secretId: string): string[] =>
      Object.entries(policies)
        .filter(([, p]) =>
          JSON.stringify((p as { Properties: { PolicyDocument: unknown } }).Properties.PolicyDocument).includes(
            `"Ref":"${secretId}"`,
          ),
        )
        .map(([id]) => id)
        .sort();
    const callbackReaders = readers(callbackId);
    expect(callbackReaders).toHaveLength(4);
    for (const name of [/ExecutionEnded/, /FleetWatch/, /Worker/, /ReportResult/])
      expect(callbackReaders.some((id) => name.test(id))).toBe(true);
    for (const id of callbackReaders) expect(readers(webhookId)).not.toContain(id);
  });

  describe('cdk-nag AwsSolutions', () => {
    // beforeAll's Template.fromStack synthesized the stack, so the acknowledging aspect has run.
    it('has no unacknowledged error', () => {
      const errors = unsuppressedNagErrors(stack).map(
        (v) => `${v.ruleName}: ${v.violatingResources.map((r) => r.constructPath).join(', ')}`,
      );
      expect(errors).toEqual([]);
    });

    it('gives every acknowledgement a written reason', () => {
      const acks = acknowledgements(stack);
      expect(acks.length).toBeGreaterThan(0);
      for (const ack of acks)
        expect({ ...ack, reasonLength: ack.reason.trim().length >= 30 }).toEqual({ ...ack, reasonLength: true });
    });

    it('still reports a wildcard that is not X-Ray or log delivery', () => {
      // Prepare
      const app = new App({ context: { 'aws:cdk:bundling-stacks': [] } });
      const wide = new RelayStack(app, 'Wide', { config: relayConfig() });
      // Act: a statement added after the stack acknowledged its own wildcards, on a role that has X-Ray's `*`
      wide.api.functions.Health.fn.addToRolePolicy(
        new iam.PolicyStatement({ actions: ['s3:GetObject'], resources: ['*'] }),
      );
      Template.fromStack(wide); // synthesis runs the acknowledging aspect, as `cdk synth` does before cdk-nag
      // Assess
      const errors = unsuppressedNagErrors(wide);
      expect(errors.map((v) => v.ruleName)).toEqual(['AwsSolutions-IAM5[Resource::*]']);
      expect(errors[0].violatingResources.map((r) => r.constructPath)).toEqual([
        'Wide/WebhookApi/Health/Function/ServiceRole/DefaultPolicy/Resource',
      ]);
    });
  });

  it('rejects a log retention CloudWatch does not offer', () => {
    const app = new App({ context: { 'aws:cdk:bundling-stacks': [] } });
    expect(() => new RelayStack(app, 'Bad', { config: relayConfig({ logRetentionDays: 31 }) })).toThrow(
      /logRetentionDays/,
    );
  });
});
