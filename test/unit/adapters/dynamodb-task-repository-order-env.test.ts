/**
 * DynamoDbTaskRepository: the container env (order_env) beside a task record, and the replacement
 * env a replaceable task keeps, sealed (issue 29 §6), on dynalite.
 */
import { GetCommand } from '@aws-sdk/lib-dynamodb';
import {
  DynamoDbTaskRepository,
  ORDER_ENV_ATTRIBUTE,
  REPLACEMENT_ENV_ATTRIBUTE,
} from '../../../lambdas/adapters/dynamodb/dynamodb-task-repository';
import type { TaskRecord } from '../../../lambdas/domain/task';
import { AesGcmKeySealer, deriveSealingKey, REPLACEMENT_ENV_INFO } from '../../../lambdas/adapters/caller-key-sealer';
import { keys } from '../../../contract/resources';
import { startDynalite, type LocalDynamo } from '../../helpers/dynalite';

const NOW = 1_700_000_000_000;
/** The real AES-256-GCM sealer with the replacement env's own label. */
const SEALER = new AesGcmKeySealer(async () => deriveSealingKey('test-caller-keys-secret', REPLACEMENT_ENV_INFO));
const ENV = { API_TOKEN: 'tok-sEcReT-1' };

const aRecord = (taskId: string): TaskRecord => ({
  task_id: taskId,
  kind: 'create-order',
  state: 'queued',
  request: { gpu_type: 'A100', env_names: Object.keys(ENV) },
  origin: { source: 'webhook' },
  created_at: new Date(NOW).toISOString(),
  updated_at: new Date(NOW).toISOString(),
});

describe('Adapter: DynamoDbTaskRepository order env', () => {
  let dynamo: LocalDynamo;
  let repo: DynamoDbTaskRepository;
  const rawItem = async (taskId: string) =>
    (await dynamo.doc.send(new GetCommand({ TableName: dynamo.tableName, Key: { pk: keys.task(taskId) } }))).Item;

  beforeAll(async () => {
    dynamo = await startDynalite();
    repo = new DynamoDbTaskRepository(dynamo.doc, dynamo.tableName, SEALER);
  });
  afterAll(async () => dynamo.close());

  it('stores the env beside the record; get never returns it, orderEnv does', async () => {
    await repo.create(aRecord('t-1'), { orderEnv: ENV });
    expect((await rawItem('t-1'))?.[ORDER_ENV_ATTRIBUTE]).toEqual(ENV);
    const record = await repo.get('t-1');
    expect(record).toMatchObject({ task_id: 't-1', request: { env_names: ['API_TOKEN'] } });
    expect(JSON.stringify(record)).not.toContain(ENV.API_TOKEN);
    expect(await repo.orderEnv('t-1')).toEqual(ENV);
  });

  it("seals a standing order's env, which may wait up to 24 h (issue 38 §7); orderEnv opens it", async () => {
    // Act
    await repo.create(aRecord('t-w'), { orderEnv: ENV, sealOrderEnv: true });
    // Assess: the item holds ciphertext only, PlaceOrder still reads the values
    const stored = (await rawItem('t-w'))?.[ORDER_ENV_ATTRIBUTE];
    expect(typeof stored).toBe('string');
    expect(JSON.stringify(await rawItem('t-w'))).not.toContain(ENV.API_TOKEN);
    expect(await repo.orderEnv('t-w')).toEqual(ENV);
    // Without a sealer, a standing order's env is refused rather than kept in clear.
    const unsealed = new DynamoDbTaskRepository(dynamo.doc, dynamo.tableName);
    await expect(unsealed.create(aRecord('t-w2'), { orderEnv: ENV, sealOrderEnv: true })).rejects.toThrow(/sealer/);
    expect(await rawItem('t-w2')).toBeUndefined();
  });

  it('keeps the env through running updates and removes it when the task finishes, exactly once', async () => {
    await repo.create(aRecord('t-2'), { orderEnv: ENV });
    await repo.update('t-2', { state: 'running', server_id: 7, order_intent_at: NOW }, NOW + 1);
    expect(await repo.orderEnv('t-2')).toEqual(ENV);
    expect(
      await repo.finish(
        't-2',
        'succeeded',
        {
          success: true,
          order_id: 1,
          server_id: 7,
          status: 'running',
          ssh_connection: 'ssh x',
          gpu: [],
          price_usd: null,
        },
        NOW + 2,
      ),
    ).toBe(true);
    expect(await repo.orderEnv('t-2')).toBeUndefined();
    // A late update of a final task (a dangling order's id) does not bring anything back.
    await repo.update('t-2', { order_id: 1 }, NOW + 3);
    expect(await rawItem('t-2')).not.toHaveProperty(ORDER_ENV_ATTRIBUTE);
    expect(await repo.finish('t-2', 'failed', { success: false, error: 'late' }, NOW + 4)).toBe(false);
  });

  it('keeps a copy for a task whose order may be replaced (issue 23): finish leaves it, get never returns it', async () => {
    await repo.create(aRecord('t-5'), { orderEnv: ENV, keepForReplacement: true });
    await repo.create(aRecord('t-6'), { orderEnv: ENV });
    for (const id of ['t-5', 't-6']) {
      await repo.finish(
        id,
        'succeeded',
        {
          success: true,
          order_id: 1,
          server_id: 7,
          status: 'running',
          ssh_connection: 'ssh x',
          gpu: [],
          price_usd: null,
        },
        NOW + 2,
      );
      expect(await repo.orderEnv(id)).toBeUndefined();
      expect(JSON.stringify(await repo.get(id))).not.toContain(ENV.API_TOKEN);
    }
    expect(await repo.replacementEnv('t-5')).toEqual(ENV);
    expect(await repo.replacementEnv('t-6')).toBeUndefined();
    expect(await rawItem('t-6')).not.toHaveProperty(REPLACEMENT_ENV_ATTRIBUTE);
  });

  it('seals the kept copy (issue 29 §6): only ciphertext in the item; dropped when the task fails or the lease ends', async () => {
    await repo.create(aRecord('t-7'), { orderEnv: ENV, keepForReplacement: true });
    const stored = (await rawItem('t-7'))?.[REPLACEMENT_ENV_ATTRIBUTE];
    expect(stored).toEqual(expect.stringMatching(/^v1\./));
    expect(JSON.stringify(stored)).not.toContain(ENV.API_TOKEN);
    expect(await repo.replacementEnv('t-7')).toEqual(ENV);
    // Another key (another label or secret) cannot open it.
    const other = new DynamoDbTaskRepository(
      dynamo.doc,
      dynamo.tableName,
      new AesGcmKeySealer(async () => deriveSealingKey('test-caller-keys-secret')),
    );
    await expect(other.replacementEnv('t-7')).rejects.toThrow();
    // Without a sealer nothing is kept at all (never in clear).
    await new DynamoDbTaskRepository(dynamo.doc, dynamo.tableName).create(aRecord('t-8'), {
      orderEnv: ENV,
      keepForReplacement: true,
    });
    expect(await rawItem('t-8')).not.toHaveProperty(REPLACEMENT_ENV_ATTRIBUTE);
    // The lease ended: dropped.
    await repo.dropReplacementEnv('t-7');
    expect(await rawItem('t-7')).not.toHaveProperty(REPLACEMENT_ENV_ATTRIBUTE);
    // A task that fails placed no order to replace: dropped in its final write.
    await repo.create(aRecord('t-9'), { orderEnv: ENV, keepForReplacement: true });
    expect(await repo.finish('t-9', 'failed', { success: false, error: 'no server' }, NOW + 2)).toBe(true);
    expect(await rawItem('t-9')).not.toHaveProperty(REPLACEMENT_ENV_ATTRIBUTE);
    expect(await rawItem('t-9')).not.toHaveProperty(ORDER_ENV_ATTRIBUTE);
  });

  it('stores no attribute for a task without env (or an empty one)', async () => {
    await repo.create(aRecord('t-3'));
    await repo.create(aRecord('t-4'), { orderEnv: {} });
    for (const id of ['t-3', 't-4']) {
      expect(await rawItem(id)).not.toHaveProperty(ORDER_ENV_ATTRIBUTE);
      expect(await repo.orderEnv(id)).toBeUndefined();
    }
    expect(await repo.orderEnv('absent')).toBeUndefined();
  });
});
