import { App, Stack } from 'aws-cdk-lib';
import { Match, Template } from 'aws-cdk-lib/assertions';
import * as dynamodb from 'aws-cdk-lib/aws-dynamodb';
import * as sfn from 'aws-cdk-lib/aws-stepfunctions';
import { JobQueue } from '../../lib/constructs/job-queue';
import { jobWorkerFunction } from '../../lib/constructs/job-worker';
import { RelaySecrets } from '../../lib/constructs/relay-secrets';
import { JOB_QUEUE, WORKER_TIMEOUT_SECONDS } from '../../contract/resources';

const build = (maxConcurrency?: number) => {
  const app = new App({ context: { 'aws:cdk:bundling-stacks': [] } }); // skip esbuild; we only read the template
  const stack = new Stack(app, 'Test');
  const table = new dynamodb.Table(stack, 'Table', {
    partitionKey: { name: 'pk', type: dynamodb.AttributeType.STRING },
  });
  const secrets = new RelaySecrets(stack, 'Secrets');
  const stateMachine = new sfn.StateMachine(stack, 'Workflow', {
    definitionBody: sfn.DefinitionBody.fromChainable(new sfn.Pass(stack, 'P')),
  });
  const consumer = jobWorkerFunction(stack, 'Worker', {
    table,
    secrets,
    stateMachine,
    environment: { TABLE_NAME: 'ignored', DEFAULT_CURRENCY: 'NATIVE-Blockchain' },
  });
  const jobs = new JobQueue(stack, 'JobQueue', { consumer, maxConcurrency });
  return { template: Template.fromStack(stack), stack, jobs };
};

describe('Construct: JobQueue', () => {
  const { template, stack } = build();

  it('creates an encrypted, TLS-only queue whose DLQ takes messages after maxReceiveCount', () => {
    template.hasResourceProperties('AWS::SQS::Queue', {
      VisibilityTimeout: JOB_QUEUE.visibilityTimeoutSeconds,
      SqsManagedSseEnabled: true,
      RedrivePolicy: { deadLetterTargetArn: Match.anyValue(), maxReceiveCount: JOB_QUEUE.maxReceiveCount },
    });
    expect(JOB_QUEUE.visibilityTimeoutSeconds).toBeGreaterThanOrEqual(6 * WORKER_TIMEOUT_SECONDS);
    template.resourceCountIs('AWS::SQS::Queue', 2);
    template.resourcePropertiesCountIs(
      'AWS::SQS::QueuePolicy',
      {
        PolicyDocument: {
          Statement: Match.arrayWith([
            Match.objectLike({ Effect: 'Deny', Condition: { Bool: { 'aws:SecureTransport': 'false' } } }),
          ]),
        },
      },
      2,
    );
  });

  it('feeds the worker one job at a time with partial batch failures and bounded concurrency', () => {
    template.hasResourceProperties('AWS::Lambda::EventSourceMapping', {
      BatchSize: 1,
      FunctionResponseTypes: ['ReportBatchItemFailures'],
      ScalingConfig: { MaximumConcurrency: 2 },
    });
  });

  it('gives the worker the hard limit as timeout and the queue, workflow and allowed secret ARNs', () => {
    const functions = template.findResources('AWS::Lambda::Function', {
      Properties: { Timeout: WORKER_TIMEOUT_SECONDS },
    });
    expect(Object.keys(functions)).toHaveLength(1);
    const env = (Object.values(functions)[0] as { Properties: { Environment: { Variables: Record<string, unknown> } } })
      .Properties.Environment.Variables;
    expect(Object.keys(env)).toEqual(
      expect.arrayContaining([
        'JOB_QUEUE_URL',
        'STATE_MACHINE_ARN',
        'TABLE_NAME',
        'MARKETPLACE_API_KEY_ARN',
        'CALLBACK_SIGNING_SECRET_ARN',
        'CHAT_WEBHOOKS_SECRET_ARN',
        'DEFAULT_CURRENCY',
      ]),
    );
    expect(env).not.toHaveProperty('SLACK_SIGNING_SECRET_ARN');
    // Results are signed with the callback signing secret; the webhook secret signs requests only.
    expect(env).not.toHaveProperty('WEBHOOK_SECRET_ARN');
    expect(stack.resolve(env.TABLE_NAME)).toEqual({ Ref: expect.stringMatching(/^Table/) });
  });

  it('grants starting executions of this state machine, visibility changes and reading three secrets only', () => {
    const policies = JSON.stringify(template.findResources('AWS::IAM::Policy'));
    expect(policies).toContain('states:StartExecution');
    expect(policies).toContain('sqs:ChangeMessageVisibility');
    expect(policies).not.toContain('"states:*"');
    expect(policies).not.toContain('"sqs:*"');
    const secretReads = template.findResources('AWS::IAM::Policy', {
      Properties: {
        PolicyDocument: {
          Statement: Match.arrayWith([
            Match.objectLike({ Action: Match.arrayWith(['secretsmanager:GetSecretValue']) }),
          ]),
        },
      },
    });
    const secretStatements = Object.values(secretReads).flatMap((p) =>
      (
        p as { Properties: { PolicyDocument: { Statement: { Action: string[] | string; Resource: unknown }[] } } }
      ).Properties.PolicyDocument.Statement.filter((s) =>
        ([] as string[]).concat(s.Action).includes('secretsmanager:GetSecretValue'),
      ),
    );
    expect(JSON.stringify(secretStatements)).not.toContain('SlackSigningSecret');
    expect(secretStatements).toHaveLength(3);
  });

  it('rejects a concurrency SQS event sources do not accept', () => {
    expect(() => build(1)).toThrow(/maxConcurrency/);
  });
});
