/** Issue 13, item 5: deploy-time defaults that only matter in an AWS account. */
import { App } from 'aws-cdk-lib';
import { Match, Template } from 'aws-cdk-lib/assertions';
import { relayConfig } from '../../lib/config';
import { DEFAULT_MEMORY_MB } from '../../lib/constructs/relay-function';
import { INDEX_READ_ACTIONS, TABLE_READ_ACTIONS, TABLE_WRITE_ACTIONS } from '../../lib/constructs/table-access';
import { API_MEMORY_MB } from '../../lib/constructs/webhook-api';
import { RelayStack } from '../../lib/relay-stack';

type Resource = { Type: string; Properties: Record<string, unknown> };
type Statement = { Action: string | string[]; Principal?: unknown; Condition?: unknown };

describe('RelayStack: production defaults', () => {
  let template: Template;

  beforeAll(() => {
    // Prepare
    const app = new App({ context: { 'aws:cdk:bundling-stacks': [] } });
    const config = relayConfig({ marketplaceUrl: 'https://marketplace.example.com' });
    // Act
    template = Template.fromStack(
      new RelayStack(app, 'Relay', { config, env: { account: '111111111111', region: 'eu-west-1' } }),
    );
  });

  it('names the state machine log group under /aws/vendedlogs/states/ and uses it', () => {
    const groups = Object.entries(template.findResources('AWS::Logs::LogGroup') as Record<string, Resource>).filter(
      ([, g]) => String(g.Properties.LogGroupName ?? '').startsWith('/aws/vendedlogs/states/'),
    );
    expect(groups).toHaveLength(1);
    const [machine] = Object.values(template.findResources('AWS::StepFunctions::StateMachine')) as Resource[];
    expect(JSON.stringify(machine.Properties.LoggingConfiguration)).toContain(groups[0][0]);
  });

  it("gives the safety net's EventBridge target a dead-letter queue, and ExecutionEnded an on-failure destination to it", () => {
    const queues = Object.keys(template.findResources('AWS::SQS::Queue')).filter((id) =>
      id.includes('SafetyNetDeadLetterQueue'),
    );
    expect(queues).toHaveLength(1);
    template.hasResourceProperties('AWS::Events::Rule', {
      Targets: [
        Match.objectLike({
          DeadLetterConfig: { Arn: { 'Fn::GetAtt': [queues[0], 'Arn'] } },
          RetryPolicy: Match.anyValue(),
        }),
      ],
    });
    template.hasResourceProperties('AWS::Lambda::EventInvokeConfig', {
      FunctionName: { Ref: Match.stringLikeRegexp('ExecutionEnded') },
      MaximumRetryAttempts: 2,
      DestinationConfig: { OnFailure: { Destination: { 'Fn::GetAtt': [queues[0], 'Arn'] } } },
    });
    template.hasResourceProperties('AWS::CloudWatch::Alarm', {
      Dimensions: [{ Name: 'QueueName', Value: { 'Fn::GetAtt': [queues[0], 'QueueName'] } }],
    });
  });

  it("grants DynamoDB item actions (and BatchGetItem, the lease store's reads by key) only, and Query on the waiting index alone: no Scan or batch writes", () => {
    const dynamoActions = new Set<string>();
    const queried = new Set<string>();
    for (const policy of Object.values(template.findResources('AWS::IAM::Policy')) as Resource[]) {
      for (const statement of (policy.Properties.PolicyDocument as { Statement: Statement[] }).Statement) {
        const actions = ([] as string[]).concat(statement.Action);
        for (const action of actions) if (action.startsWith('dynamodb:')) dynamoActions.add(action);
        if (actions.includes('dynamodb:Query')) {
          for (const resource of ([] as unknown[]).concat((statement as { Resource?: unknown }).Resource))
            queried.add(JSON.stringify(resource));
        }
      }
    }
    expect([...dynamoActions].sort()).toEqual(
      [...TABLE_READ_ACTIONS, ...TABLE_WRITE_ACTIONS, ...INDEX_READ_ACTIONS].sort(),
    );
    // Query (issue 29 §5) names the waiting index, never the table itself.
    expect(queried.size).toBeGreaterThan(0);
    for (const resource of queried) expect(resource).toContain('/index/waiting');
  });

  it("lets only this account's CloudWatch alarms use the alarm topic key", () => {
    // The alarm topic's key: the one KMS key whose policy names CloudWatch (the caller-keys key does not).
    const keys = Object.values(template.findResources('AWS::KMS::Key')) as Resource[];
    const key =
      keys.find((k) => JSON.stringify(k.Properties.KeyPolicy).includes('cloudwatch.amazonaws.com')) ?? keys[0]!;
    const statements = (key.Properties.KeyPolicy as { Statement: Statement[] }).Statement;
    const cloudwatch = statements.filter((s) => JSON.stringify(s.Principal).includes('cloudwatch.amazonaws.com'));
    expect(cloudwatch).toHaveLength(1);
    const condition = cloudwatch[0].Condition as {
      StringEquals: unknown;
      ArnLike: { 'aws:SourceArn': { 'Fn::Join': [string, unknown[]] } };
    };
    expect(condition.StringEquals).toEqual({ 'aws:SourceAccount': '111111111111' });
    const arn = condition.ArnLike['aws:SourceArn']['Fn::Join'][1]
      .map((part) => (typeof part === 'string' ? part : '<partition>'))
      .join('');
    expect(arn).toBe('arn:<partition>:cloudwatch:eu-west-1:111111111111:alarm:*');
  });
});

describe('RelayStack: memory and source maps (BENCHMARKS.md "Cold start")', () => {
  it('runs route functions with 512 MB, the others with 256 MB, and none with --enable-source-maps', () => {
    // Prepare
    const app = new App({ context: { 'aws:cdk:bundling-stacks': [] } });
    const template = Template.fromStack(
      new RelayStack(app, 'Relay', { config: relayConfig({ marketplaceUrl: 'https://marketplace.example.com' }) }),
    );
    // Act
    const functions = Object.entries(
      template.findResources('AWS::Lambda::Function') as Record<string, Resource>,
    ).filter(
      ([, fn]) =>
        (fn.Properties.Environment as { Variables?: Record<string, unknown> } | undefined)?.Variables
          ?.POWERTOOLS_SERVICE_NAME === 'gpu-relay',
    );
    // Assess
    expect(functions.length).toBeGreaterThan(10);
    for (const [id, fn] of functions) {
      expect(fn.Properties.MemorySize).toBe(id.startsWith('WebhookApi') ? API_MEMORY_MB : DEFAULT_MEMORY_MB);
      expect(JSON.stringify(fn.Properties.Environment)).not.toContain('enable-source-maps');
    }
  });
});
