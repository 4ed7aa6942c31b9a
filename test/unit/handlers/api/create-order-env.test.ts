/**
 * Container env values (issue 13 item 3) never travel in the Step Functions input: POST
 * /webhook/create-order seals them beside the task record (real repository on dynalite), the real
 * SfnWorkflowStarter's StartExecution input carries neither names nor values, and PlaceOrder still
 * sends them in create_order. Once the task is final they are gone from the table.
 */
import { SFNClient, StartExecutionCommand } from '@aws-sdk/client-sfn';
import { GetCommand } from '@aws-sdk/lib-dynamodb';
import { mockClient } from 'aws-sdk-client-mock';
import { DynamoDbIdempotencyStore } from '../../../../lambdas/adapters/dynamodb/dynamodb-idempotency-store';
import {
  DynamoDbTaskRepository,
  ORDER_ENV_ATTRIBUTE,
} from '../../../../lambdas/adapters/dynamodb/dynamodb-task-repository';
import { SfnWorkflowStarter } from '../../../../lambdas/adapters/sfn-workflow-starter';
import { AesGcmKeySealer, deriveSealingKey, ORDER_ACCESS_INFO } from '../../../../lambdas/adapters/caller-key-sealer';
import { InvalidOrderRequestError } from '../../../../lambdas/domain/errors';
import type { CreateOrderRequest } from '../../../../lambdas/domain/marketplace-types';
import type { PlaceOrderDeps } from '../../../../lambdas/domain/create-order/place-order';
import { createCreateOrderHandler } from '../../../../lambdas/handlers/api/create-order';
import type { AcceptDeps } from '../../../../lambdas/handlers/api/accept-deps';
import { createPlaceOrderStepHandler } from '../../../../lambdas/handlers/workflow/place-order';
import { keys } from '../../../../contract/resources';
import { lambdaContext, signedPost } from '../../../fixtures/events/api-event';
import { startDynalite, type LocalDynamo } from '../../../helpers/dynalite';
import { apiEnv, SECRET } from '../../../fakes/env';
import { FakeQueue } from '../../../fakes/job-queue';
import { FakeSlidingWindow } from '../../../fakes/sliding-window';
import { parseResult } from '../../../helpers/parse-result';
import { placementWaits } from '../../../fakes/placement-intents';

const PATH = '/webhook/create-order';
const ARN = 'arn:aws:states:us-east-1:123456789012:stateMachine:CreateOrder';
const NOW = 1_700_000_000_000;
const ENV = { HF_TOKEN: 'hf_sEcReT-value-1', WANDB_API_KEY: 'wandb-sEcReT-value-2' };

/** create_order as the marketplace sees it; nothing else is called on the happy path. */
class RecordingMarketplace {
  public readonly created: CreateOrderRequest[] = [];
  public async createOrder(request: CreateOrderRequest) {
    this.created.push(request);
    return { order_id: 4242 };
  }
  public async listOrders() {
    return [];
  }
}

describe('Create-order env values: sealed in the table, not in the workflow input', () => {
  const sfn = mockClient(SFNClient);
  let dynamo: LocalDynamo;
  let tasks: DynamoDbTaskRepository;
  let n = 0;

  beforeAll(async () => {
    dynamo = await startDynalite();
    // The access secrets (issue 37: a generated Jupyter token, the default ports map 8888 http) are sealed.
    tasks = new DynamoDbTaskRepository(
      dynamo.doc,
      dynamo.tableName,
      undefined,
      new AesGcmKeySealer(async () => deriveSealingKey('test-caller-keys-secret', ORDER_ACCESS_INFO)),
    );
  });
  afterAll(async () => {
    sfn.restore();
    await dynamo.close();
  });
  beforeEach(() => {
    sfn.reset();
    sfn.on(StartExecutionCommand).resolves({ executionArn: 'arn:exec', startDate: new Date(NOW) });
  });

  /** Accepts one signed create-order through the real chain and returns its task id and the StartExecution input text. */
  const accept = async (body: Record<string, unknown>) => {
    n += 1;
    const taskId = `00000000-0000-4000-8000-${String(n).padStart(12, '0')}`;
    const deps: AcceptDeps = {
      env: apiEnv(),
      window: new FakeSlidingWindow(),
      webhookSecrets: async () => [SECRET],
      tasks,
      idempotency: new DynamoDbIdempotencyStore(dynamo.doc, dynamo.tableName),
      workflow: new SfnWorkflowStarter(new SFNClient({ region: 'us-east-1' }), ARN),
      queue: new FakeQueue(),
      now: () => NOW,
      newTaskId: () => taskId,
    };
    const result = parseResult(
      await createCreateOrderHandler(() => deps)(signedPost(SECRET, PATH, JSON.stringify(body)), lambdaContext()),
    );
    const calls = sfn.commandCalls(StartExecutionCommand);
    return { result, taskId, startInput: calls.length === 1 ? String(calls[0].args[0].input.input) : undefined };
  };

  const placeDeps = (marketplace: RecordingMarketplace): PlaceOrderDeps => ({
    marketplace,
    tasks,
    access: tasks,
    claims: { release: async () => undefined },
    ...placementWaits(),
  });

  /** The workflow state PlaceOrder receives: the execution input plus FindServer's choice. */
  const stateAfterSearch = (startInput: string) => ({
    ...(JSON.parse(startInput) as Record<string, unknown>),
    search: { server: { id: 7, gpu_array: ['NVIDIA GeForce RTX 4090'], price_usd: 0.4 }, attempt: 1, excluded: [] },
  });

  it('keeps every env value and name out of the StartExecution input, and PlaceOrder still sends the env', async () => {
    // Act: accept
    const { result, taskId, startInput } = await accept({ gpu_type: 'RTX 4090', env: ENV });
    // Assess: queued, one execution, its input free of the env
    expect(result.statusCode).toBe(202);
    expect(startInput).toBeDefined();
    for (const [name, value] of Object.entries(ENV)) {
      expect(startInput).not.toContain(value);
      expect(startInput).not.toContain(name);
    }
    expect(JSON.parse(String(startInput)).request).not.toHaveProperty('env');
    // The record readable through the API shows the names only.
    const record = await tasks.get(taskId);
    expect(record?.request).toMatchObject({ env_names: ['HF_TOKEN', 'WANDB_API_KEY'] });
    expect(JSON.stringify(record)).not.toContain(ENV.HF_TOKEN);

    // Act: PlaceOrder as the state machine runs it
    const marketplace = new RecordingMarketplace();
    const placement = await createPlaceOrderStepHandler(
      () => placeDeps(marketplace),
      () => NOW + 5_000,
    )(stateAfterSearch(String(startInput)));
    // Assess: the order carries the env
    expect(placement).toMatchObject({ retry: false, order_id: 4242, server_id: 7 });
    expect(marketplace.created).toHaveLength(1);
    expect(marketplace.created[0]).toMatchObject({ renting_server: 7, env: ENV });
  });

  it('removes the sealed env in the write that makes the task final', async () => {
    // Prepare
    const { taskId } = await accept({ gpu_type: 'A100', env: { TOKEN: 'tok-sEcReT' } });
    const rawItem = async () =>
      (await dynamo.doc.send(new GetCommand({ TableName: dynamo.tableName, Key: { pk: keys.task(taskId) } }))).Item;
    expect((await rawItem())?.[ORDER_ENV_ATTRIBUTE]).toEqual({ TOKEN: 'tok-sEcReT' });
    expect(await tasks.orderEnv(taskId)).toEqual({ TOKEN: 'tok-sEcReT' });
    // Act
    expect(await tasks.finish(taskId, 'failed', { success: false, error: 'No A100 available' }, NOW + 1_000)).toBe(
      true,
    );
    // Assess
    const item = await rawItem();
    expect(item).toMatchObject({ state: 'failed' });
    expect(item).not.toHaveProperty(ORDER_ENV_ATTRIBUTE);
    expect(JSON.stringify(item)).not.toContain('tok-sEcReT');
    expect(await tasks.orderEnv(taskId)).toBeUndefined();
  });

  it('fails PlaceOrder without placing when the env was asked for but is no longer stored', async () => {
    // Prepare: the task ended meanwhile (env removed), but a PlaceOrder still runs
    const { taskId, startInput } = await accept({ gpu_type: 'A100', env: { TOKEN: 'tok' } });
    await tasks.finish(taskId, 'failed', { success: false, error: 'stopped' }, NOW + 1_000);
    const marketplace = new RecordingMarketplace();
    // Act / Assess
    await expect(
      createPlaceOrderStepHandler(
        () => placeDeps(marketplace),
        () => NOW + 2_000,
      )(stateAfterSearch(String(startInput))),
    ).rejects.toBeInstanceOf(InvalidOrderRequestError);
    expect(marketplace.created).toEqual([]);
  });

  it('stores nothing and sends no env for a request without one', async () => {
    const { taskId, startInput } = await accept({ gpu_type: 'H100' });
    expect(await tasks.orderEnv(taskId)).toBeUndefined();
    const marketplace = new RecordingMarketplace();
    await createPlaceOrderStepHandler(
      () => placeDeps(marketplace),
      () => NOW + 5_000,
    )(stateAfterSearch(String(startInput)));
    expect(marketplace.created[0]).not.toHaveProperty('env');
  });

  it('refuses an env value holding "&" with 400 and queues nothing: no execution, no task, no sealed env', async () => {
    // Act
    const { result, taskId, startInput } = await accept({
      gpu_type: 'A100',
      env: { OK: 'fine', CALLBACK: 'https://x.example/?a=1&b=2' },
    });
    // Assess
    expect(result.statusCode).toBe(400);
    expect(result.body).toEqual({ error: 'env values must not contain "&"' });
    expect(startInput).toBeUndefined();
    expect(sfn.commandCalls(StartExecutionCommand)).toHaveLength(0);
    expect(await tasks.get(taskId)).toBeUndefined();
    expect(await tasks.orderEnv(taskId)).toBeUndefined();
  });

  it('removes the sealed env with the record when the hand-off fails', async () => {
    sfn.on(StartExecutionCommand).rejects(new Error('Step Functions down'));
    const { result, taskId } = await accept({ gpu_type: 'A100', env: { TOKEN: 'tok' } });
    expect(result.statusCode).toBe(503);
    expect(await tasks.orderEnv(taskId)).toBeUndefined();
    expect(await tasks.get(taskId)).toBeUndefined();
  });
});
