import { GetCommand, PutCommand } from '@aws-sdk/lib-dynamodb';
import {
  DynamoDbTaskRepository,
  TASK_RETENTION_SECONDS,
} from '../../../lambdas/adapters/dynamodb/dynamodb-task-repository';
import { TaskAlreadyExistsError } from '../../../lambdas/domain/errors';
import type { TaskRecord } from '../../../lambdas/domain/task';
import { keys } from '../../../contract/resources';
import { startDynalite, type LocalDynamo } from '../../helpers/dynalite';
import { lostAnswerClient, type LostAnswerClient } from '../../helpers/lost-answer';

const T0 = Date.parse('2025-01-01T00:00:00.000Z');
let counter = 0;
const record = (overrides: Partial<TaskRecord> = {}): TaskRecord => {
  counter += 1;
  return {
    task_id: `task-${counter}`,
    kind: 'cancel-order',
    state: 'queued',
    request: { order_id: 42, callback_url: 'https://example.com/cb' },
    origin: { source: 'webhook' },
    created_at: new Date(T0).toISOString(),
    updated_at: new Date(T0).toISOString(),
    ...overrides,
  };
};

describe('Adapter: DynamoDbTaskRepository (dynalite)', () => {
  let db: LocalDynamo;
  let repo: DynamoDbTaskRepository;
  beforeAll(async () => {
    db = await startDynalite();
    repo = new DynamoDbTaskRepository(db.doc, db.tableName);
  });
  afterAll(async () => db.close());

  it('creates a record and reads it back validated', async () => {
    // Prepare
    const task = record({ origin: { source: 'slack', responseUrl: 'https://hooks.slack.com/r/1' } });
    // Act
    await repo.create(task);
    // Assess
    expect(await repo.get(task.task_id)).toEqual(task);
    const { Item } = await db.doc.send(
      new GetCommand({ TableName: db.tableName, Key: { pk: keys.task(task.task_id) } }),
    );
    expect(Item?.ttl).toBe(T0 / 1000 + TASK_RETENTION_SECONDS);
  });

  it('throws TaskAlreadyExistsError when the id is taken', async () => {
    const task = record();
    await repo.create(task);
    await expect(repo.create({ ...task, kind: 'status' })).rejects.toBeInstanceOf(TaskAlreadyExistsError);
    expect((await repo.get(task.task_id))?.kind).toBe('cancel-order');
  });

  it('returns undefined for an unknown task', async () => {
    expect(await repo.get('nope')).toBeUndefined();
  });

  it('throws when the stored item is not a valid task', async () => {
    await db.doc.send(
      new PutCommand({ TableName: db.tableName, Item: { pk: keys.task('broken'), task_id: 'broken', state: 'weird' } }),
    );
    await expect(repo.get('broken')).rejects.toThrow();
  });

  it('finishes exactly once under concurrent finishes', async () => {
    // Prepare
    const task = record();
    await repo.create(task);
    // Act
    const wins = await Promise.all(
      Array.from({ length: 10 }, (_, i) =>
        repo.finish(
          task.task_id,
          i % 2 ? 'failed' : 'succeeded',
          i % 2 ? { success: false, error: `e${i}` } : { success: true, order_id: i, status: 'cancelled' },
          T0 + 1_000 + i,
        ),
      ),
    );
    // Assess
    expect(wins.filter(Boolean)).toHaveLength(1);
    const winner = wins.indexOf(true);
    const stored = await repo.get(task.task_id);
    expect(stored?.finished_at).toBe(new Date(T0 + 1_000 + winner).toISOString());
    expect(stored?.state).toBe(winner % 2 ? 'failed' : 'succeeded');
  });

  it('returns false when finishing an unknown task', async () => {
    expect(await repo.finish('missing', 'failed', { success: false, error: 'x' }, T0)).toBe(false);
  });

  it('updates state and order ids of a running task', async () => {
    const task = record({ kind: 'create-order' });
    await repo.create(task);
    await repo.update(task.task_id, { state: 'running' }, T0 + 5);
    await repo.update(task.task_id, { order_id: 77, server_id: 9 }, T0 + 6);
    const stored = await repo.get(task.task_id);
    expect(stored).toMatchObject({
      state: 'running',
      order_id: 77,
      server_id: 9,
      updated_at: new Date(T0 + 6).toISOString(),
    });
  });

  it('stores the order intent and the cancelled flag the workflow relies on', async () => {
    const task = record({ kind: 'create-order' });
    await repo.create(task);
    await repo.update(task.task_id, { server_id: 9, order_intent_at: 1_735_689_600 }, T0 + 5);
    await repo.update(task.task_id, { order_cancelled: true }, T0 + 6);
    const stored = await repo.get(task.task_id);
    expect(stored).toMatchObject({ server_id: 9, order_intent_at: 1_735_689_600, order_cancelled: true });
  });

  it('never moves a final task, but still records its order id', async () => {
    const task = record({ kind: 'create-order' });
    await repo.create(task);
    await repo.finish(task.task_id, 'failed', { success: false, error: 'timed out' }, T0 + 10);
    await repo.update(task.task_id, { state: 'running', order_id: 555 }, T0 + 20);
    const stored = await repo.get(task.task_id);
    expect(stored?.state).toBe('failed');
    expect(stored?.order_id).toBe(555);
    expect(stored?.result).toEqual({ success: false, error: 'timed out' });
  });

  it('does not create a record when updating an unknown task', async () => {
    await repo.update('ghost', { state: 'running', order_id: 1 }, T0);
    expect(await repo.get('ghost')).toBeUndefined();
  });

  it('removes a record', async () => {
    const task = record();
    await repo.create(task);
    await repo.remove(task.task_id);
    expect(await repo.get(task.task_id)).toBeUndefined();
  });

  describe('a write that landed but whose answer was lost (the SDK retries it)', () => {
    let lossy: LostAnswerClient;
    let lossyRepo: DynamoDbTaskRepository;
    beforeAll(() => {
      lossy = lostAnswerClient(db);
      lossyRepo = new DynamoDbTaskRepository(lossy.doc, db.tableName);
    });
    afterAll(() => lossy.close());

    it("finish still answers true: the retry fails its own condition, the final write is this call's", async () => {
      // Prepare
      const task = record();
      await repo.create(task);
      lossy.loseNext('UpdateItem');
      // Act
      const won = await lossyRepo.finish(
        task.task_id,
        'succeeded',
        { success: true, order_id: 42, status: 'cancelled' },
        T0 + 1_000,
      );
      // Assess: the one final write is ours, so ours is the one delivery (a false here loses the callback)
      expect(lossy.lost()).toBe(1);
      expect(won).toBe(true);
      expect(await repo.get(task.task_id)).toMatchObject({
        state: 'succeeded',
        result: { success: true, order_id: 42, status: 'cancelled' },
      });
      expect(
        await repo.finish(task.task_id, 'succeeded', { success: true, order_id: 42, status: 'cancelled' }, T0 + 1_000),
      ).toBe(false);
    });

    it('finish stays false for a caller that lost to another final write', async () => {
      const task = record();
      await repo.create(task);
      expect(await repo.finish(task.task_id, 'failed', { success: false, error: 'first' }, T0 + 1_000)).toBe(true);
      expect(await lossyRepo.finish(task.task_id, 'failed', { success: false, error: 'first' }, T0 + 1_000)).toBe(
        false,
      );
      expect((await repo.get(task.task_id))?.result).toEqual({ success: false, error: 'first' });
    });

    it('a named finisher whose final write landed while every attempt lost its answer wins on its next call; another finisher does not', async () => {
      // Prepare: all three attempts of the first call lose their answers, so the call itself fails.
      const task = record();
      await repo.create(task);
      const result = { success: true, order_id: 7, status: 'cancelled' } as const;
      lossy.loseNext('UpdateItem', 3);
      await expect(lossyRepo.finish(task.task_id, 'succeeded', result, T0 + 1_000, 'ReportResult')).rejects.toThrow();
      // Act: the step is retried (a new call, same finisher); a different path tries too.
      const retried = await repo.finish(task.task_id, 'succeeded', result, T0 + 2_000, 'ReportResult');
      const other = await repo.finish(
        task.task_id,
        'failed',
        { success: false, error: 'late' },
        T0 + 3_000,
        'ExecutionEnded',
      );
      const anonymous = await repo.finish(task.task_id, 'failed', { success: false, error: 'late' }, T0 + 3_000);
      // Assess
      expect(retried).toBe(true);
      expect(other).toBe(false);
      expect(anonymous).toBe(false);
      expect((await repo.get(task.task_id))?.result).toEqual(result);
      // Once the finisher marked its result delivered, a further retry of it does not win again.
      await repo.markDelivered(task.task_id, T0 + 4_000);
      expect(await repo.finish(task.task_id, 'succeeded', result, T0 + 5_000, 'ReportResult')).toBe(false);
      expect(await repo.get(task.task_id)).not.toHaveProperty('delivered_at');
    });

    it('markDelivered on a task without a record does nothing', async () => {
      await expect(repo.markDelivered('no-such-task', T0)).resolves.toBeUndefined();
      expect(await repo.get('no-such-task')).toBeUndefined();
    });

    it('update (state, the order intent, the order id) is simply applied again', async () => {
      const task = record({ kind: 'create-order' });
      await repo.create(task);
      const lostBefore = lossy.lost();
      lossy.loseNext('UpdateItem');
      await lossyRepo.update(task.task_id, { state: 'running' }, T0 + 5);
      lossy.loseNext('UpdateItem');
      await lossyRepo.update(task.task_id, { server_id: 9, order_intent_at: 1_735_689_600 }, T0 + 6);
      expect(lossy.lost() - lostBefore).toBe(2);
      expect(await repo.get(task.task_id)).toMatchObject({
        state: 'running',
        server_id: 9,
        order_intent_at: 1_735_689_600,
      });
    });

    it('create reports the id as taken (the hand-off treats that as its own landed write, f50eb51)', async () => {
      const task = record();
      lossy.loseNext('PutItem');
      await expect(lossyRepo.create(task)).rejects.toBeInstanceOf(TaskAlreadyExistsError);
      expect(await repo.get(task.task_id)).toEqual(task);
    });
  });
});
