/**
 * The local runtime's permission checks (issue 30) enforce the policies of the synthesized stack,
 * not a copy: the model the runtime builds holds the template `cdk deploy` would send, a change to
 * that template changes the decisions, and the service-side grants (state machine → task functions,
 * SQS mapping → job queue, API Gateway and EventBridge → functions, alarms → topic) hold.
 */
import { App } from 'aws-cdk-lib';
import { Template } from 'aws-cdk-lib/assertions';
import { runSimulation } from '@cloud-copilot/iam-simulate';
import { relayConfig } from '../../lib/config';
import { RelayStack } from '../../lib/relay-stack';
import { ROUTES } from '../../contract/routes';
import { requestsForCall } from '../../local/iam/call-requests';
import { IamChecker } from '../../local/iam/checker';
import { STATE_MACHINE_PRINCIPAL, type PolicyDocument } from '../../local/iam/policy-model';
import { REPORT_LOCAL_NAMES } from '../../local/iam-report';
import { synthesizeStackModel, type StackModel } from '../../local/stack-model';

type Resources = Record<string, { Type: string; Properties?: Record<string, unknown> }>;

const checkerFor = (model: StackModel) =>
  new IamChecker({ model, local: REPORT_LOCAL_NAMES, mode: 'enforce', log: () => undefined });

const getItem = (key: string) => ({ TableName: REPORT_LOCAL_NAMES.tableName, Key: { pk: { S: key } } });

describe('Local IAM checks: the synthesized policies', () => {
  let model: StackModel;

  beforeAll(() => {
    model = synthesizeStackModel();
  });

  it('enforces the template `cdk synth` produces for the stack: every role policy is the deployed one', () => {
    // Prepare: the stack as bin/relay.ts builds it (default configuration), synthesized on its own
    const app = new App({ context: { 'aws:cdk:bundling-stacks': [] } });
    const stack = new RelayStack(app, 'Relay', {
      config: relayConfig({}),
      env: { account: '000000000000', region: 'us-east-1' },
    });
    const deployed = Template.fromStack(stack).toJSON().Resources as Resources;
    const policies = (resources: Resources) =>
      Object.fromEntries(
        Object.entries(resources)
          .filter(([, r]) =>
            ['AWS::IAM::Policy', 'AWS::SQS::QueuePolicy', 'AWS::SNS::TopicPolicy', 'AWS::Lambda::Permission'].includes(
              r.Type,
            ),
          )
          .map(([id, r]) => [id, r.Properties]),
      );

    // Assert
    expect(Object.keys(policies(deployed)).length).toBeGreaterThan(40);
    expect(policies(model.template.Resources as Resources)).toEqual(policies(deployed));
    // Every function of the stack is attributed (no SDK call of a handler goes unchecked).
    const functions = Object.entries(deployed).filter(([, r]) => r.Type === 'AWS::Lambda::Function');
    const relayFunctions = functions.filter(([, r]) => String(r.Properties?.Description).startsWith('GPU relay:'));
    expect(model.functions.map((f) => f.logicalId).sort()).toEqual(relayFunctions.map(([id]) => id).sort());
  });

  it('decides from the template object itself: removing a statement from it refuses the call', async () => {
    // Prepare: a model whose Slack policy loses the caller-key statement
    const mutated: StackModel = JSON.parse(JSON.stringify(model)) as StackModel;
    const slack = mutated.functions.find((f) => f.name === 'ApiSlackCommand')!;
    for (const resource of Object.values(mutated.template.Resources as Resources)) {
      if (resource.Type !== 'AWS::IAM::Policy') continue;
      const roles = (resource.Properties?.Roles as { Ref: string }[]).map((r) => r.Ref);
      if (!roles.includes(slack.roleLogicalId)) continue;
      const document = resource.Properties?.PolicyDocument as { Statement: PolicyDocument['Statement'] };
      document.Statement = document.Statement.filter((s) => !JSON.stringify(s.Condition ?? {}).includes('KEYS#all'));
    }
    const original = checkerFor(model);
    const changed = checkerFor(mutated);

    // Act
    const call = (checker: IamChecker) =>
      checker.runAs('ApiSlackCommand', () => checker.checkCall('DynamoDB', 'GetItemCommand', getItem('KEYS#all')));

    // Assert
    await expect(call(original)).resolves.toBeUndefined();
    await expect(call(changed)).rejects.toMatchObject({
      name: 'AccessDeniedException',
      $metadata: { httpStatusCode: 400 },
      message: expect.stringMatching(/dynamodb:GetItem.*table\/relay.*KEYS#all/),
    });
    expect(changed.denials()[0].statement).toEqual({
      Effect: 'Allow',
      Action: 'dynamodb:GetItem',
      Resource: 'arn:aws:dynamodb:us-east-1:000000000000:table/relay',
      Condition: { 'ForAllValues:StringLike': { 'dynamodb:LeadingKeys': ['KEYS#all'] } },
    });
  });

  it('checks every partition key of a transaction and a batch, each with its own action', async () => {
    // Prepare
    const checker = checkerFor(model);
    const transaction = {
      TransactItems: [
        { Put: { TableName: 'relay', Item: { pk: { S: 'TASK#1' } } } },
        { Update: { TableName: 'relay', Key: { pk: { S: 'KEYS#all' } } } },
      ],
    };
    const batch = { RequestItems: { relay: { Keys: [{ pk: { S: 'TASK#1' } }, { pk: { S: 'QUOTA#orders' } }] } } };

    // Act
    const requests = requestsForCall('DynamoDB', 'TransactWriteItemsCommand', transaction, () => '');

    // Assert
    expect(requests?.map((r) => [r.action, r.context['dynamodb:LeadingKeys']])).toEqual([
      ['dynamodb:PutItem', ['TASK#1']],
      ['dynamodb:UpdateItem', ['KEYS#all']],
    ]);
    // get-task may read a task, never a write of the caller keys or a batch naming the quota.
    await expect(
      checker.runAs('ApiGetTask', () => checker.checkCall('DynamoDB', 'TransactWriteItemsCommand', transaction)),
    ).rejects.toThrow(/dynamodb:PutItem/);
    await expect(
      checker.runAs('ApiGetTask', () => checker.checkCall('DynamoDB', 'BatchGetItemCommand', batch)),
    ).rejects.toThrow(/dynamodb:BatchGetItem.*QUOTA#orders, TASK#1/);
    await expect(
      checker.runAs('ApiGetTask', () => checker.checkCall('DynamoDB', 'GetItemCommand', getItem('TASK#1'))),
    ).resolves.toBeUndefined();
  });

  it('lets the state machine invoke exactly its task functions', async () => {
    // Prepare
    const checker = checkerFor(model);
    const tasks = new Set(Object.keys(model.asl.entryForFunction));
    const invoked = new Set(
      Object.values(model.asl.functionForState).map(
        (entry) => model.functions.find((f) => f.entry === entry)!.logicalId,
      ),
    );

    // Act
    const allowed: string[] = [];
    for (const fn of model.functions) {
      const ok = await checker
        .authorize(STATE_MACHINE_PRINCIPAL, {
          action: 'lambda:InvokeFunction',
          resource: checker.policies.functionArns.get(fn.name)!,
          context: {},
        })
        .then(
          () => true,
          () => false,
        );
      if (ok) allowed.push(fn.logicalId);
    }

    // Assert: the Task states' functions, not ExecutionEnded (EventBridge's) nor any other
    expect(allowed.sort()).toEqual([...invoked].sort());
    expect(tasks.size).toBe(invoked.size + 1);
  });

  it('lets the SQS event source mapping (the worker role) receive and delete from the job queue only', async () => {
    // Prepare
    const checker = checkerFor(model);
    const on = (url: string, command: string) =>
      checker.runAs('JobWorker', () => checker.checkCall('SQS', command, { QueueUrl: url }));

    // Assert
    for (const command of ['ReceiveMessageCommand', 'DeleteMessageBatchCommand', 'ChangeMessageVisibilityCommand'])
      await expect(on(REPORT_LOCAL_NAMES.jobQueueUrl, command)).resolves.toBeUndefined();
    await expect(on(REPORT_LOCAL_NAMES.deadLetterQueueUrl, 'ReceiveMessageCommand')).rejects.toThrow(
      /sqs:ReceiveMessage.*jobs-dlq/,
    );
  });

  it("lets API Gateway invoke each route's function for that route only", async () => {
    // Prepare
    const checker = checkerFor(model);
    const sourceArn = (route: (typeof ROUTES)[number]) =>
      `arn:aws:execute-api:us-east-1:000000000000:${checker.policies.httpApiId}/$default/${route.method}${route.path}`;
    const [first, second] = ROUTES;

    // Assert
    for (const route of ROUTES)
      await expect(
        checker.authorizeInvoke('apigateway.amazonaws.com', `Api${route.id}`, sourceArn(route)),
      ).resolves.toBeUndefined();
    await expect(
      checker.authorizeInvoke('apigateway.amazonaws.com', `Api${first.id}`, sourceArn(second)),
    ).rejects.toThrow(/lambda:InvokeFunction/);
  });

  it('lets CloudWatch alarms of this account publish to the alarm topic over TLS only (the topic policy)', async () => {
    // Prepare
    const checker = checkerFor(model);
    const resources = model.template.Resources as Resources;
    const topicId = Object.keys(resources).find((id) => resources[id].Type === 'AWS::SNS::Topic')!;
    const topicArn = `arn:aws:sns:us-east-1:000000000000:${topicId}`;
    const alarms = Object.keys(resources).filter((id) => resources[id].Type === 'AWS::CloudWatch::Alarm');
    const topicPolicy = checker.policies.resourcePolicies.get(topicArn)!;
    const publish = (alarm: string, secure: string) =>
      runSimulation(
        {
          identityPolicies: [],
          serviceControlPolicies: [],
          resourceControlPolicies: [],
          resourcePolicy: topicPolicy.document,
          request: {
            action: 'sns:Publish',
            principal: 'cloudwatch.amazonaws.com',
            resource: { accountId: '000000000000', resource: topicArn },
            contextVariables: {
              'aws:SourceArn': `arn:aws:cloudwatch:us-east-1:000000000000:alarm:${alarm}`,
              'aws:SourceAccount': '000000000000',
              'aws:SecureTransport': secure,
            },
          },
        } as Parameters<typeof runSimulation>[0],
        {},
      ).then((r) => (r.resultType === 'error' ? JSON.stringify(r.errors) : r.overallResult));

    // Assert: every alarm of the stack names the topic, and each may publish to it
    expect(alarms.length).toBeGreaterThan(10);
    for (const alarm of alarms) {
      expect(JSON.stringify(resources[alarm].Properties?.AlarmActions)).toContain(topicId);
      await expect(publish(alarm, 'true')).resolves.toBe('Allowed');
    }
    await expect(publish(alarms[0], 'false')).resolves.toBe('ExplicitlyDenied');
  });
});
