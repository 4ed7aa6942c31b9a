/**
 * Hand-off faults at the API: the SQS send or the Step Functions start fails. The unchanged route
 * handlers run with their real adapters (DynamoDB task records, idempotency keys and rate windows
 * on dynalite; SqsJobQueue on fauxqs; SfnWorkflowStarter on the local Step Functions endpoint),
 * and the hand-off is broken three ways: the client points at a closed port, the service answers
 * an error, or a port wrapper throws.
 *
 * Promises checked: the API answers 503 with an `error` (Slack: its ephemeral failure message),
 * leaves no task record, no message and no execution behind, releases the Idempotency-Key, and the
 * caller's retry (same key) is accepted with exactly one hand-off.
 */
import { AesGcmKeySealer, deriveSealingKey, ORDER_ACCESS_INFO } from '../../lambdas/adapters/caller-key-sealer';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { GetQueueAttributesCommand, PurgeQueueCommand, SQSClient } from '@aws-sdk/client-sqs';
import { SFNClient } from '@aws-sdk/client-sfn';
import { testEnv } from '../fakes/env';
import { DynamoDbIdempotencyStore } from '../../lambdas/adapters/dynamodb/dynamodb-idempotency-store';
import { DynamoDbSlidingWindow } from '../../lambdas/adapters/dynamodb/dynamodb-sliding-window';
import { DynamoDbTaskRepository } from '../../lambdas/adapters/dynamodb/dynamodb-task-repository';
import { SfnWorkflowStarter } from '../../lambdas/adapters/sfn-workflow-starter';
import { SqsJobQueue } from '../../lambdas/adapters/sqs-job-queue';
import { HAND_OFF_FAILED_MESSAGE } from '../../lambdas/domain/requests/accept-task';
import type { JobQueue, WorkflowStarter } from '../../lambdas/domain/ports';
import { createCancelOrderHandler } from '../../lambdas/handlers/api/cancel-order';
import type { AcceptDeps } from '../../lambdas/handlers/api/accept-deps';
import type { ApiHandler } from '../../lambdas/handlers/api/chain';
import { createCreateOrderHandler } from '../../lambdas/handlers/api/create-order';
import { createPriceAlertHandler } from '../../lambdas/handlers/api/price-alert';
import { createSlackCommandHandler } from '../../lambdas/handlers/api/slack-command';
import { createStatusHandler } from '../../lambdas/handlers/api/status';
import { startLocalSqs, type LocalSqs } from '../../local/fauxqs';
import { LocalStepFunctions } from '../../local/stepfunctions';
import { apiEvent, lambdaContext, sign } from '../fixtures/events/api-event';
import { startDynalite, type LocalDynamo } from '../helpers/dynalite';

const SECRET = 'handoff-fault-secret';
const STATE_MACHINE_ARN = 'arn:aws:states:us-east-1:000000000000:stateMachine:relay-create-order';
const credentials = { accessKeyId: 'local', secretAccessKey: 'local' };

type Fault = 'closed endpoint' | 'service error' | 'failing port';
const FAULTS: readonly Fault[] = ['closed endpoint', 'service error', 'failing port'];

interface RouteCase {
  readonly name: string;
  readonly build: (deps: () => AcceptDeps) => ApiHandler;
  readonly path: string;
  readonly body: string;
  readonly via: 'workflow' | 'queue';
  readonly slack?: boolean;
}

const ROUTE_CASES: readonly RouteCase[] = [
  {
    name: 'create-order',
    build: createCreateOrderHandler,
    path: '/webhook/create-order',
    body: '{"gpu_type":"RTX 4090"}',
    via: 'workflow',
  },
  {
    name: 'cancel-order',
    build: createCancelOrderHandler,
    path: '/webhook/cancel-order',
    body: '{"order_id":42}',
    via: 'queue',
  },
  {
    name: 'price-alert',
    build: createPriceAlertHandler,
    path: '/webhook/price-alert',
    body: '{"gpu_type":"A100","target_price":0.5}',
    via: 'queue',
  },
  { name: 'status', build: createStatusHandler, path: '/webhook/status', body: '', via: 'queue' },
  {
    name: 'slack rent',
    build: createSlackCommandHandler,
    path: '/slack/command',
    body: 'text=rent%20RTX_4090&trigger_id=',
    via: 'workflow',
    slack: true,
  },
  {
    name: 'slack cancel',
    build: createSlackCommandHandler,
    path: '/slack/command',
    body: 'text=cancel%2042&trigger_id=',
    via: 'queue',
    slack: true,
  },
];

/** A port that throws like a throttled or unreachable service. */
const failingPort: WorkflowStarter & JobQueue = {
  start: async () => {
    throw Object.assign(new Error('Rate exceeded'), { name: 'ThrottlingException' });
  },
  send: async () => {
    throw Object.assign(new Error('Service unavailable'), { name: 'ServiceUnavailable' });
  },
};

/** An endpoint that answers every request with one AWS JSON-protocol error. */
const startAwsErrorServer = async (
  status: number,
  body: Record<string, string>,
): Promise<{ url: string; close: () => Promise<void> }> => {
  const server = createServer((req, res) => {
    req.resume();
    req.on('end', () => {
      res.writeHead(status, { 'content-type': 'application/x-amz-json-1.0' });
      res.end(JSON.stringify(body));
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', () => resolve()));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
};

describe('Faults: SQS send and Step Functions start at the API', () => {
  let dynamo: LocalDynamo;
  let sqs: LocalSqs;
  let sqsClient: SQSClient;
  let sfn: LocalStepFunctions;
  let sfnEndpoint: { endpoint: string; close: () => Promise<void> };
  let closedPort: number;
  let sfnErrors: { url: string; close: () => Promise<void> };
  const clients: { destroy(): void }[] = [];
  let n = 0;

  beforeAll(async () => {
    [dynamo, sqs] = await Promise.all([startDynalite(), startLocalSqs({ visibilityTimeoutSeconds: 30 })]);
    sqsClient = new SQSClient({
      endpoint: sqs.endpoint,
      region: 'us-east-1',
      credentials,
      useQueueUrlAsEndpoint: false,
    });
    // A one-state machine: only whether an execution was started matters here.
    sfn = new LocalStepFunctions({
      asl: { StartAt: 'Done', States: { Done: { Type: 'Succeed' } } },
      handlers: {},
      stateMachineArn: STATE_MACHINE_ARN,
    });
    sfnEndpoint = await sfn.listen(0);
    sfnErrors = await startAwsErrorServer(400, {
      __type: 'StateMachineDoesNotExist',
      message: 'State Machine Does Not Exist',
    });
    const closed = createServer();
    await new Promise<void>((resolve) => closed.listen(0, '127.0.0.1', () => resolve()));
    closedPort = (closed.address() as AddressInfo).port;
    await new Promise<void>((resolve) => closed.close(() => resolve()));
  });
  afterAll(async () => {
    clients.forEach((c) => c.destroy());
    sqsClient?.destroy();
    await sfnEndpoint?.close();
    await sfnErrors?.close();
    await sfn?.close();
    await Promise.all([dynamo?.close(), sqs?.close()]);
  });
  beforeEach(async () => {
    await sqsClient.send(new PurgeQueueCommand({ QueueUrl: sqs.queueUrl }));
  });

  const sfnClient = (endpoint: string) => {
    const c = new SFNClient({ endpoint, region: 'us-east-1', credentials, maxAttempts: 1 });
    clients.push(c);
    return c;
  };
  const sqsAt = (endpoint: string) => {
    const c = new SQSClient({
      endpoint,
      region: 'us-east-1',
      credentials,
      maxAttempts: 1,
      useQueueUrlAsEndpoint: false,
    });
    clients.push(c);
    return c;
  };

  /** The hand-off ports for one fault. */
  const brokenPorts = (fault: Fault): { workflow: WorkflowStarter; queue: JobQueue } => {
    const closed = `http://127.0.0.1:${closedPort}`;
    switch (fault) {
      case 'closed endpoint':
        return {
          workflow: new SfnWorkflowStarter(sfnClient(closed), STATE_MACHINE_ARN),
          queue: new SqsJobQueue(sqsAt(closed), sqs.queueUrl),
        };
      case 'service error':
        // The services answer, with an error: an unknown state machine (from an endpoint speaking
        // the Step Functions error format, since the local one runs any ARN), a missing queue (fauxqs).
        return {
          workflow: new SfnWorkflowStarter(sfnClient(sfnErrors.url), `${STATE_MACHINE_ARN}-missing`),
          queue: new SqsJobQueue(sqsAt(sqs.endpoint), sqs.queueUrl.replace(/[^/]+$/, 'no-such-queue')),
        };
      case 'failing port':
        return { workflow: failingPort, queue: failingPort };
    }
  };
  const workingPorts = () => ({
    workflow: new SfnWorkflowStarter(sfnClient(sfnEndpoint.endpoint), STATE_MACHINE_ARN),
    queue: new SqsJobQueue(sqsAt(sqs.endpoint), sqs.queueUrl),
  });

  const queueDepth = async (): Promise<number> => {
    const { Attributes } = await sqsClient.send(
      new GetQueueAttributesCommand({
        QueueUrl: sqs.queueUrl,
        AttributeNames: ['ApproximateNumberOfMessages', 'ApproximateNumberOfMessagesNotVisible'],
      }),
    );
    return (
      Number(Attributes?.ApproximateNumberOfMessages ?? 0) +
      Number(Attributes?.ApproximateNumberOfMessagesNotVisible ?? 0)
    );
  };
  const executionExists = (taskId: string): boolean => {
    try {
      sfn.describeExecution(`arn:aws:states:us-east-1:000000000000:execution:relay-create-order:${taskId}`);
      return true;
    } catch {
      return false;
    }
  };

  describe.each(ROUTE_CASES)('$name', (route) => {
    it.each(FAULTS)('answers a failed hand-off (%s) without leaving anything, and accepts the retry', async (fault) => {
      // Prepare: the route's real adapters; the hand-off port switches from broken to working.
      // With the sealer of access secrets: the default ports map 8888 (http), so a create draws a Jupyter token (issue 37).
      const tasks = new DynamoDbTaskRepository(
        dynamo.doc,
        dynamo.tableName,
        undefined,
        new AesGcmKeySealer(async () => deriveSealingKey('faults-handoff-caller-keys', ORDER_ACCESS_INFO)),
      );
      const ports = { current: brokenPorts(fault) };
      const ids: string[] = [];
      const deps: AcceptDeps = {
        env: testEnv({ WEBHOOK_SECRET: SECRET, ALLOW_PRIVATE_CALLBACKS: 'false', ALLOW_UNSIGNED_SLACK: 'true' }),
        window: new DynamoDbSlidingWindow(dynamo.doc, dynamo.tableName),
        tasks,
        idempotency: new DynamoDbIdempotencyStore(dynamo.doc, dynamo.tableName),
        webhookSecrets: async () => [SECRET],
        slackSigningSecret: async () => undefined,
        workflow: { start: (id, input) => ports.current.workflow.start(id, input) },
        queue: { send: (message) => ports.current.queue.send(message) },
        newTaskId: () => {
          n += 1;
          const id = `00000000-0000-4000-8000-${String(n).padStart(12, '0')}`;
          ids.push(id);
          return id;
        },
      };
      const handler = route.build(() => deps);
      const key = `retry-key-${n}`;
      const body = route.slack ? `${route.body}${key}` : route.body;
      const event = () =>
        apiEvent({
          path: route.path,
          body,
          base64: route.slack,
          sourceIp: `198.51.100.${(n % 200) + 1}`,
          headers: route.slack
            ? { 'content-type': 'application/x-www-form-urlencoded' }
            : { 'x-webhook-signature': sign(SECRET, body), 'Idempotency-Key': key },
        });
      const call = async () => {
        const result = (await handler(event(), lambdaContext())) as { statusCode: number; body: string };
        return { statusCode: result.statusCode, json: JSON.parse(result.body) as Record<string, unknown> };
      };

      // Act: the hand-off fails.
      const failed = await call();

      // Assess: 503 with an error (Slack: a 200 ephemeral message, as Slack shows non-200 as a generic failure) ...
      if (route.slack)
        expect(failed).toEqual({
          statusCode: 200,
          json: { response_type: 'ephemeral', text: HAND_OFF_FAILED_MESSAGE },
        });
      else expect(failed).toEqual({ statusCode: 503, json: { error: HAND_OFF_FAILED_MESSAGE } });
      // ... and nothing left behind: no record, no message, no execution.
      expect(ids).toHaveLength(1);
      expect(await tasks.get(ids[0])).toBeUndefined();
      expect(await queueDepth()).toBe(0);
      expect(executionExists(ids[0])).toBe(false);

      // Act: the service is back and the caller retries the same request (same key).
      ports.current = workingPorts();
      const retried = await call();
      const taskId = ids[1];
      const repeated = await call();

      // Assess: accepted once, with one hand-off; the key was released by the failure and binds now,
      // so a further repeat (Slack: same trigger_id) answers the same task.
      if (route.slack) {
        expect(retried.json).toMatchObject({ response_type: 'in_channel', text: expect.stringContaining(taskId) });
        expect(repeated.json).toMatchObject({ response_type: 'in_channel', text: expect.stringContaining(taskId) });
      } else {
        expect(retried).toMatchObject({ statusCode: 202, json: { status: 'queued', task_id: taskId } });
        expect(repeated).toMatchObject({ statusCode: 202, json: { task_id: taskId } });
      }
      expect(await tasks.get(taskId)).toMatchObject({ state: 'queued' });
      expect(await queueDepth()).toBe(route.via === 'queue' ? 1 : 0);
      expect(executionExists(taskId)).toBe(route.via === 'workflow');
    });
  });
});
