/**
 * Issue 38 §6, numbers DynamoDB cannot store: a request carrying one (`max_price: 1e200`, a price of
 * 1e-200, a budget of 1e200) used to be accepted by the schema and fail at the table write with a 5xx.
 * Through the real handlers over the real task, idempotency and caller-key stores (dynalite), every
 * such value is a 400 naming the field and its range, and nothing is written.
 */
import { SFNClient, StartExecutionCommand } from '@aws-sdk/client-sfn';
import { ScanCommand } from '@aws-sdk/lib-dynamodb';
import { mockClient } from 'aws-sdk-client-mock';
import { DynamoDbCallerKeys } from '../../../../lambdas/adapters/dynamodb/dynamodb-caller-keys';
import { DynamoDbIdempotencyStore } from '../../../../lambdas/adapters/dynamodb/dynamodb-idempotency-store';
import { DynamoDbTaskRepository } from '../../../../lambdas/adapters/dynamodb/dynamodb-task-repository';
import { SfnWorkflowStarter } from '../../../../lambdas/adapters/sfn-workflow-starter';
import type { AcceptDeps } from '../../../../lambdas/handlers/api/accept-deps';
import { createAdminKeysCreateHandler } from '../../../../lambdas/handlers/api/admin-keys';
import { createCreateOrderHandler } from '../../../../lambdas/handlers/api/create-order';
import { createPriceAlertHandler } from '../../../../lambdas/handlers/api/price-alert';
import { apiEvent, lambdaContext, signedPost, v2Headers } from '../../../fixtures/events/api-event';
import { fakeSealer } from '../../../fakes/caller-keys';
import { apiEnv, SECRET } from '../../../fakes/env';
import { FakeQueue } from '../../../fakes/job-queue';
import { FakeSlidingWindow } from '../../../fakes/sliding-window';
import { startDynalite, type LocalDynamo } from '../../../helpers/dynalite';
import { parseResult } from '../../../helpers/parse-result';

const ARN = 'arn:aws:states:us-east-1:123456789012:stateMachine:CreateOrder';
const NOW = 1_700_000_000_000;

describe('Numbers DynamoDB cannot store are 400s, not 5xx (issue 38 §6)', () => {
  const sfn = mockClient(SFNClient);
  let dynamo: LocalDynamo;
  let n = 0;

  beforeAll(async () => {
    dynamo = await startDynalite();
    sfn.on(StartExecutionCommand).resolves({ executionArn: 'arn:exec', startDate: new Date(NOW) });
  });
  afterAll(async () => {
    sfn.restore();
    await dynamo.close();
  });

  const deps = (queue = new FakeQueue()): AcceptDeps => ({
    env: apiEnv(),
    window: new FakeSlidingWindow(),
    webhookSecrets: async () => [SECRET],
    tasks: new DynamoDbTaskRepository(dynamo.doc, dynamo.tableName),
    idempotency: new DynamoDbIdempotencyStore(dynamo.doc, dynamo.tableName),
    workflow: new SfnWorkflowStarter(new SFNClient({ region: 'us-east-1' }), ARN),
    queue,
    now: () => NOW,
    newTaskId: () => {
      n += 1;
      return `00000000-0000-4000-8000-${String(n).padStart(12, '0')}`;
    },
  });
  const items = async (): Promise<number> =>
    (await dynamo.doc.send(new ScanCommand({ TableName: dynamo.tableName }))).Count ?? 0;

  it.each([
    [{ gpu_type: 'RTX 4090', max_price: 1e200 }, 'max_price must be between 0.000001 and 10000 (USD per hour)'],
    [{ gpu_type: 'RTX 4090', max_price: 1e-200 }, 'max_price must be between 0.000001 and 10000 (USD per hour)'],
    [{ gpu_type: 'RTX 4090', max_price: 0.5, max_hours: 1e-200 }, 'max_hours must be at least 0.001'],
    [{ gpu_type: 'RTX 4090', min_reliability: 1e-200 }, 'min_reliability must be 0 or a number between 0.000001 and 1'],
  ])('create-order %j → 400 %s, nothing written', async (body, error) => {
    const before = await items();
    const result = parseResult(
      await createCreateOrderHandler(() => deps())(
        signedPost(SECRET, '/webhook/create-order', JSON.stringify(body)),
        lambdaContext(),
      ),
    );
    expect({ status: result.statusCode, body: result.body }).toEqual({ status: 400, body: { error } });
    expect(await items()).toBe(before);
  });

  it.each([
    [{ gpu_type: 'RTX 4090', target_price: 1e200 }, 'target_price must be between 0.000001 and 10000 (USD per hour)'],
    [{ gpu_type: 'RTX 4090', target_price: 1e-200 }, 'target_price must be between 0.000001 and 10000 (USD per hour)'],
  ])('price-alert %j → 400 %s, nothing written or queued', async (body, error) => {
    const before = await items();
    const queue = new FakeQueue();
    const result = parseResult(
      await createPriceAlertHandler(() => deps(queue))(
        signedPost(SECRET, '/webhook/price-alert', JSON.stringify(body)),
        lambdaContext(),
      ),
    );
    expect({ status: result.statusCode, body: result.body }).toEqual({ status: 400, body: { error } });
    expect(await items()).toBe(before);
    expect(queue.sent).toHaveLength(0);
  });

  it.each([
    [{ budget_usd_per_day: 1e200 }, 'budget_usd_per_day must be between 0.01 and 1000000 (USD per day)'],
    [{ budget_usd_per_day: 1e-200 }, 'budget_usd_per_day must be between 0.01 and 1000000 (USD per day)'],
    [{ orders_per_hour: 1e15 }, 'orders_per_hour must be a whole number between 1 and 100000'],
  ])('POST /admin/keys %j → 400 %s, no key stored', async (extra, error) => {
    const before = await items();
    const create = createAdminKeysCreateHandler(() => ({
      ...deps(),
      store: new DynamoDbCallerKeys(dynamo.doc, dynamo.tableName, 0),
      sealer: fakeSealer,
      newSecret: () => 'rk_new-secret',
    }));
    n += 1;
    const body = JSON.stringify({ name: `team-${n}`, scopes: ['order'], ...extra });
    const result = parseResult(
      await create(
        apiEvent({ path: '/admin/keys', body, headers: v2Headers(SECRET, 'POST', '/admin/keys', body) }),
        lambdaContext(),
      ),
    );
    expect({ status: result.statusCode, body: result.body }).toEqual({ status: 400, body: { error } });
    expect(await items()).toBe(before);
  });
});
