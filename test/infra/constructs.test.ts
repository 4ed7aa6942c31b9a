/**
 * RelayTable, WebhookApi and Monitoring on their own, around a stub state machine and queue. The route
 * functions point at a stand-in handler so these assertions do not depend on the handlers' files.
 */
import { App, Stack } from 'aws-cdk-lib';
import { Match, Template } from 'aws-cdk-lib/assertions';
import * as apigwv2 from 'aws-cdk-lib/aws-apigatewayv2';
import * as logs from 'aws-cdk-lib/aws-logs';
import * as sfn from 'aws-cdk-lib/aws-stepfunctions';
import * as sqs from 'aws-cdk-lib/aws-sqs';
import { Monitoring } from '../../lib/constructs/monitoring';
import { RelaySecrets } from '../../lib/constructs/relay-secrets';
import { RelayTable } from '../../lib/constructs/relay-table';
import { WebhookApi, routeSecrets, routeUsesTable } from '../../lib/constructs/webhook-api';
import { ROUTES } from '../../contract/routes';
import { actionsOf, functionProps, logicalIdOf, resourcesFor } from './helpers';

const STUB_ENTRY = 'test/infra/fixtures/noop-handler.ts';

describe('Constructs: RelayTable, WebhookApi, Monitoring', () => {
  let template: Template;
  let stack: Stack;

  beforeAll(() => {
    // Prepare
    const app = new App({ context: { 'aws:cdk:bundling-stacks': [] } });
    stack = new Stack(app, 'Parts', { env: { account: '111111111111', region: 'eu-west-1' } });
    const { table } = new RelayTable(stack, 'RelayTable', { deletionProtection: false });
    const secrets = new RelaySecrets(stack, 'Secrets');
    const stateMachine = new sfn.StateMachine(stack, 'Workflow', {
      definitionBody: sfn.DefinitionBody.fromChainable(new sfn.Pass(stack, 'Noop')),
    });
    const deadLetterQueue = new sqs.Queue(stack, 'Dlq', { enforceSSL: true });
    const jobQueue = new sqs.Queue(stack, 'Jobs', {
      enforceSSL: true,
      deadLetterQueue: { queue: deadLetterQueue, maxReceiveCount: 5 },
    });
    const api = new WebhookApi(stack, 'WebhookApi', {
      table,
      secrets,
      stateMachine,
      jobQueue,
      environment: { MARKETPLACE_URL: 'https://m.example' },
      throttle: { rateLimit: 7, burstLimit: 11 },
      logRetention: logs.RetentionDays.TWO_WEEKS,
      routes: ROUTES.map((route) => ({ ...route, entry: STUB_ENTRY })),
    });
    new Monitoring(stack, 'Monitoring', {
      alarmEmail: 'ops@example.com',
      deadLetterQueue,
      stateMachine,
      httpApi: api.httpApi,
      functions: api.lambdaFunctions(),
      marketplaceThrottledThreshold: 4,
      callbackFailureRateThreshold: 0.25,
    });
    // Act
    template = Template.fromStack(stack);
  });

  describe('RelayTable', () => {
    it('keys the table on pk with TTL on ttl, on demand, with PITR and encryption', () => {
      template.hasResourceProperties('AWS::DynamoDB::Table', {
        KeySchema: [{ AttributeName: 'pk', KeyType: 'HASH' }],
        AttributeDefinitions: [
          { AttributeName: 'pk', AttributeType: 'S' },
          { AttributeName: 'wq', AttributeType: 'S' },
          { AttributeName: 'wq_order', AttributeType: 'S' },
        ],
        TimeToLiveSpecification: { AttributeName: 'ttl', Enabled: true },
        BillingMode: 'PAY_PER_REQUEST',
        PointInTimeRecoverySpecification: { PointInTimeRecoveryEnabled: true },
        SSESpecification: { SSEEnabled: true },
        DeletionProtectionEnabled: false,
      });
    });

    it('has the one index, the waiting queue (issue 29 §5): one partition sorted by GPU type and arrival', () => {
      template.hasResourceProperties('AWS::DynamoDB::Table', {
        GlobalSecondaryIndexes: [
          {
            IndexName: 'waiting',
            KeySchema: [
              { AttributeName: 'wq', KeyType: 'HASH' },
              { AttributeName: 'wq_order', KeyType: 'RANGE' },
            ],
            Projection: { ProjectionType: 'ALL' },
          },
        ],
      });
    });

    it('retains the table when the stack is deleted', () => {
      template.hasResource('AWS::DynamoDB::Table', { DeletionPolicy: 'Retain', UpdateReplacePolicy: 'Retain' });
    });

    it('turns deletion protection on by default', () => {
      const other = new Stack(new App(), 'Other');
      new RelayTable(other, 'RelayTable');
      Template.fromStack(other).hasResourceProperties('AWS::DynamoDB::Table', { DeletionProtectionEnabled: true });
    });
  });

  describe('WebhookApi', () => {
    it.each(ROUTES.map((r) => [`${r.method} ${r.path}`]))('routes %s to a Lambda integration', (routeKey) => {
      template.hasResourceProperties('AWS::ApiGatewayV2::Route', {
        RouteKey: routeKey,
        Target: Match.objectLike({ 'Fn::Join': Match.arrayWith([Match.arrayWith(['integrations/'])]) }),
      });
    });

    it('defines exactly the routes of lib/routes.ts', () => {
      const keys = Object.values(template.findResources('AWS::ApiGatewayV2::Route'))
        .map((r) => r.Properties.RouteKey)
        .sort();
      expect(keys).toEqual(ROUTES.map((r) => `${r.method} ${r.path}`).sort());
    });

    it('throttles and access-logs the $default stage', () => {
      template.hasResourceProperties('AWS::ApiGatewayV2::Stage', {
        StageName: '$default',
        AutoDeploy: true,
        DefaultRouteSettings: { ThrottlingRateLimit: 7, ThrottlingBurstLimit: 11 },
        AccessLogSettings: { DestinationArn: Match.anyValue(), Format: Match.stringLikeRegexp('requestId') },
      });
    });

    it("names the access log group under /aws/vendedlogs/ and delivers the stage's logs there", () => {
      const groups = template.findResources('AWS::Logs::LogGroup', {
        Properties: { LogGroupName: '/aws/vendedlogs/Parts/api-access' },
      });
      expect(Object.keys(groups)).toHaveLength(1);
      const stage = Object.values(template.findResources('AWS::ApiGatewayV2::Stage'))[0];
      expect(stage.Properties.AccessLogSettings.DestinationArn).toEqual({
        'Fn::GetAtt': [Object.keys(groups)[0], 'Arn'],
      });
    });

    it('keeps headers out of the access log format (the signature header)', () => {
      const stage = Object.values(template.findResources('AWS::ApiGatewayV2::Stage'))[0];
      expect(stage.Properties.AccessLogSettings.Format).not.toMatch(/header|signature|body/i);
    });

    it('gives create-order StartExecution on the state machine and no SendMessage', () => {
      const actions = actionsOf(template, 'WebhookApiCreateOrderFunction');
      expect(actions).toContain('states:StartExecution');
      expect(actions).not.toContain('sqs:SendMessage');
      expect(resourcesFor(template, 'WebhookApiCreateOrderFunction', 'states:StartExecution')).toEqual([
        JSON.stringify({ Ref: logicalIdOf(template, 'AWS::StepFunctions::StateMachine', 'Workflow') }),
      ]);
    });

    it.each(['CancelOrder', 'PriceAlert', 'Status'])(
      'gives %s SendMessage on the job queue and no StartExecution',
      (id) => {
        const actions = actionsOf(template, `WebhookApi${id}Function`);
        expect(actions).toContain('sqs:SendMessage');
        expect(actions).not.toContain('states:StartExecution');
        expect(resourcesFor(template, `WebhookApi${id}Function`, 'sqs:SendMessage')).toEqual([
          JSON.stringify({ 'Fn::GetAtt': [logicalIdOf(template, 'AWS::SQS::Queue', 'Jobs'), 'Arn'] }),
        ]);
      },
    );

    it("lets the Slack command start executions, send messages and read only the Slack signing secret and the caller keys' data key", () => {
      const actions = actionsOf(template, 'WebhookApiSlackCommandFunction');
      expect([...actions]).toEqual(
        expect.arrayContaining(['states:StartExecution', 'sqs:SendMessage', 'secretsmanager:GetSecretValue']),
      );
      const secretRefs = resourcesFor(template, 'WebhookApiSlackCommandFunction', 'secretsmanager:GetSecretValue');
      // The caller keys' data key seals a rent's generated Jupyter token (issue 37 §3).
      expect(secretRefs.sort()).toEqual(
        [
          JSON.stringify({ Ref: logicalIdOf(template, 'AWS::SecretsManager::Secret', 'SecretsSlackSigningSecret') }),
          JSON.stringify({ Ref: logicalIdOf(template, 'AWS::SecretsManager::Secret', 'SecretsCallerKeysSecret') }),
        ].sort(),
      );
    });

    it('lets the marketplace summary read the API key and nothing but the API key', () => {
      const secretRefs = resourcesFor(
        template,
        'WebhookApiMarketplaceSummaryFunction',
        'secretsmanager:GetSecretValue',
      );
      expect(secretRefs).toEqual([
        JSON.stringify({ Ref: logicalIdOf(template, 'AWS::SecretsManager::Secret', 'SecretsMarketplaceApiKey') }),
      ]);
      const actions = actionsOf(template, 'WebhookApiMarketplaceSummaryFunction');
      expect(actions).not.toContain('states:StartExecution');
      expect(actions).not.toContain('sqs:SendMessage');
    });

    it.each(ROUTES.filter((r) => r.signed).map((r) => [r.id]))(
      'lets signed route %s read the webhook secret and the caller-keys secret only',
      (id) => {
        const secretRefs = resourcesFor(template, `WebhookApi${id}Function`, 'secretsmanager:GetSecretValue');
        expect(secretRefs.sort()).toEqual(
          [
            JSON.stringify({ Ref: logicalIdOf(template, 'AWS::SecretsManager::Secret', 'SecretsWebhookSecret') }),
            JSON.stringify({ Ref: logicalIdOf(template, 'AWS::SecretsManager::Secret', 'SecretsCallerKeysSecret') }),
          ].sort(),
        );
      },
    );

    it('lets get-task read the table', () => {
      expect([...actionsOf(template, 'WebhookApiGetTaskFunction')]).toEqual(
        expect.arrayContaining(['dynamodb:GetItem', 'dynamodb:UpdateItem']),
      );
    });

    it.each(['Health', 'OpenApi'])('grants %s nothing beyond logs and traces', (id) => {
      const actions = [...actionsOf(template, `WebhookApi${id}Function`)];
      expect(actions.filter((a) => !a.startsWith('xray:'))).toEqual([]);
    });

    it('gives the table to exactly the routes that rate-limit, record tasks or pace the marketplace', () => {
      for (const route of ROUTES) {
        expect(actionsOf(template, `WebhookApi${route.id}Function`).has('dynamodb:PutItem')).toBe(
          routeUsesTable(route),
        );
      }
    });

    it('sets STATE_MACHINE_ARN and JOB_QUEUE_URL only where the route hands off there', () => {
      for (const route of ROUTES) {
        const env = (
          functionProps(template, `WebhookApi${route.id}Function`).Environment as { Variables: Record<string, unknown> }
        ).Variables;
        expect(env.TABLE_NAME).toBeDefined();
        expect(env.MARKETPLACE_URL).toBe('https://m.example');
        expect('STATE_MACHINE_ARN' in env).toBe(route.permissions.includes('startExecution'));
        expect('JOB_QUEUE_URL' in env).toBe(route.permissions.includes('sendMessage'));
        expect('WEBHOOK_SECRET_ARN' in env).toBe(route.signed);
        expect('MARKETPLACE_API_KEY_ARN' in env).toBe(route.permissions.includes('marketplace'));
        expect('CHAT_WEBHOOKS_SECRET_ARN' in env).toBe(false);
      }
    });

    it('names the secrets each kind of route reads', () => {
      const byId = Object.fromEntries(ROUTES.map((r) => [r.id, routeSecrets(r)]));
      expect(byId.CreateOrder).toEqual(['webhook', 'callerKeys']);
      expect(byId.MarketplaceSummary).toEqual(['apiKey']);
      expect(byId.SlackCommand).toEqual(['slack', 'callerKeys']);
      expect(byId.Health).toEqual([]);
    });
  });

  describe('Monitoring', () => {
    it('encrypts the alarm topic, enforces TLS and subscribes the alarm e-mail', () => {
      template.hasResourceProperties('AWS::SNS::Topic', { KmsMasterKeyId: Match.anyValue() });
      template.hasResourceProperties('AWS::SNS::TopicPolicy', {
        PolicyDocument: {
          Statement: Match.arrayWith([
            Match.objectLike({ Effect: 'Deny', Condition: { Bool: { 'aws:SecureTransport': 'false' } } }),
          ]),
        },
      });
      template.hasResourceProperties('AWS::SNS::Subscription', { Protocol: 'email', Endpoint: 'ops@example.com' });
      template.hasResourceProperties('AWS::KMS::Key', {
        EnableKeyRotation: true,
        KeyPolicy: {
          Statement: Match.arrayWith([Match.objectLike({ Principal: { Service: 'cloudwatch.amazonaws.com' } })]),
        },
      });
    });

    it('alarms when the DLQ is not empty', () => {
      template.hasResourceProperties('AWS::CloudWatch::Alarm', {
        MetricName: 'ApproximateNumberOfMessagesVisible',
        Namespace: 'AWS/SQS',
        Threshold: 1,
        ComparisonOperator: 'GreaterThanOrEqualToThreshold',
        Dimensions: [
          {
            Name: 'QueueName',
            Value: { 'Fn::GetAtt': [logicalIdOf(template, 'AWS::SQS::Queue', 'Dlq'), 'QueueName'] },
          },
        ],
        AlarmActions: [{ Ref: logicalIdOf(template, 'AWS::SNS::Topic', 'MonitoringAlarmTopic') }],
      });
    });

    it.each(['ExecutionsFailed', 'ExecutionsTimedOut'])('alarms on workflow %s', (metricName) => {
      template.hasResourceProperties('AWS::CloudWatch::Alarm', {
        MetricName: metricName,
        Namespace: 'AWS/States',
        Threshold: 1,
        AlarmActions: [{ Ref: logicalIdOf(template, 'AWS::SNS::Topic', 'MonitoringAlarmTopic') }],
      });
    });

    it('alarms on errors and throttles of every route function', () => {
      for (const metricName of ['Errors', 'Throttles']) {
        const alarms = template.findResources('AWS::CloudWatch::Alarm', {
          Properties: { MetricName: metricName, Namespace: 'AWS/Lambda' },
        });
        expect(Object.keys(alarms)).toHaveLength(ROUTES.length);
      }
    });

    it('alarms on API 5xx of the HTTP API', () => {
      template.hasResourceProperties('AWS::CloudWatch::Alarm', {
        MetricName: '5xx',
        Namespace: 'AWS/ApiGateway',
        Dimensions: [
          { Name: 'ApiId', Value: { Ref: logicalIdOf(template, 'AWS::ApiGatewayV2::Api', 'WebhookApiHttpApi') } },
        ],
      });
    });

    it('alarms on marketplace code-5 answers above the threshold', () => {
      template.hasResourceProperties('AWS::CloudWatch::Alarm', {
        MetricName: 'MarketplaceErrors',
        Namespace: 'GpuRelay',
        Threshold: 4,
        Statistic: 'Sum',
        Dimensions: Match.arrayEquals([
          { Name: 'ResultCode', Value: '5' },
          { Name: 'service', Value: 'gpu-relay' },
        ]),
      });
    });

    it('alarms on the callback failure rate with metric math', () => {
      template.hasResourceProperties('AWS::CloudWatch::Alarm', {
        Threshold: 0.25,
        ComparisonOperator: 'GreaterThanThreshold',
        Metrics: Match.arrayWith([
          Match.objectLike({ Expression: Match.stringLikeRegexp('failures.*/.*deliveries') }),
          Match.objectLike({
            Id: 'failures',
            MetricStat: Match.objectLike({
              Metric: Match.objectLike({ MetricName: 'CallbackFailures', Namespace: 'GpuRelay' }),
            }),
          }),
          Match.objectLike({
            Id: 'deliveries',
            MetricStat: Match.objectLike({ Metric: Match.objectLike({ MetricName: 'CallbackDeliveries' }) }),
          }),
        ]),
      });
    });

    it('rejects a callback failure rate outside (0, 1]', () => {
      const other = new Stack(new App(), 'Bad');
      const queue = new sqs.Queue(other, 'Q');
      const machine = new sfn.StateMachine(other, 'M', {
        definitionBody: sfn.DefinitionBody.fromChainable(new sfn.Pass(other, 'P')),
      });
      const api = new apigwv2.HttpApi(other, 'Api');
      expect(
        () =>
          new Monitoring(other, 'Monitoring', {
            deadLetterQueue: queue,
            stateMachine: machine,
            httpApi: api,
            functions: {},
            callbackFailureRateThreshold: 1.5,
          }),
      ).toThrow(/callbackFailureRateThreshold/);
    });

    it('builds a dashboard covering flow, latency, marketplace errors, deliveries and the DLQ', () => {
      const dashboards = Object.values(template.findResources('AWS::CloudWatch::Dashboard'));
      expect(dashboards).toHaveLength(1);
      const body = JSON.stringify(stack.resolve(dashboards[0].Properties.DashboardBody));
      for (const name of [
        'TasksAccepted',
        'OrdersPlaced',
        'OrdersReady',
        'OrderTimeouts',
        'TasksFailed',
        'MarketplaceErrors',
        'CallbackFailures',
        'ChatFailures',
        'ApproximateNumberOfMessagesVisible',
        'ExecutionTime',
        'Latency',
        'p99',
      ]) {
        expect(body).toContain(name);
      }
    });
  });
});
