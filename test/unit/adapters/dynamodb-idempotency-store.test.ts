import { GetCommand } from '@aws-sdk/lib-dynamodb';
import { createHash } from 'node:crypto';
import { DynamoDbIdempotencyStore } from '../../../lambdas/adapters/dynamodb/dynamodb-idempotency-store';
import { keys } from '../../../contract/resources';
import { startDynalite, type LocalDynamo } from '../../helpers/dynalite';
import { lostAnswerClient } from '../../helpers/lost-answer';

const DAY = 24 * 3600;

describe('Adapter: DynamoDbIdempotencyStore (dynalite)', () => {
  let db: LocalDynamo;
  let store: DynamoDbIdempotencyStore;
  beforeAll(async () => {
    db = await startDynalite();
    store = new DynamoDbIdempotencyStore(db.doc, db.tableName);
  });
  afterAll(async () => db.close());

  it('returns the first task id to every repeat within 24 h', async () => {
    expect(await store.claim('key-1', 'first', 0, DAY)).toBe('first');
    expect(await store.claim('key-1', 'second', DAY * 1000 - 1, DAY)).toBe('first');
  });

  it('binds exactly one task id when repeats race', async () => {
    const results = await Promise.all(Array.from({ length: 10 }, (_, i) => store.claim('race', `t${i}`, 0, DAY)));
    expect(new Set(results).size).toBe(1);
  });

  it('treats an expired key as new (expiry is checked, not left to TTL)', async () => {
    await store.claim('key-2', 'old', 0, DAY);
    expect(await store.claim('key-2', 'new', DAY * 1000, DAY)).toBe('new');
  });

  it('stores a hash of the key, never the key itself', async () => {
    await store.claim('secret-ish key', 'task', 0, DAY);
    const hashed = keys.idempotency(createHash('sha256').update('secret-ish key').digest('hex'));
    const { Item } = await db.doc.send(new GetCommand({ TableName: db.tableName, Key: { pk: hashed } }));
    expect(Item?.task_id).toBe('task');
    expect(JSON.stringify(Item)).not.toContain('secret-ish');
  });

  it('keeps signed requests in their own item family: a signed-request key never answers for an Idempotency-Key', async () => {
    const signed = new DynamoDbIdempotencyStore(db.doc, db.tableName, keys.signedRequest);
    expect(await signed.claim('CreateOrder:1700000000:abc', 'signed-task', 0, 360)).toBe('signed-task');
    expect(await store.claim('CreateOrder:1700000000:abc', 'header-task', 0, DAY)).toBe('header-task');
    expect(await signed.claim('CreateOrder:1700000000:abc', 'copy', 359_000, 360)).toBe('signed-task');
    expect(await signed.claim('CreateOrder:1700000000:abc', 'later', 360_000, 360)).toBe('later');
    const pk = keys.signedRequest(createHash('sha256').update('CreateOrder:1700000000:abc').digest('hex'));
    const { Item } = await db.doc.send(new GetCommand({ TableName: db.tableName, Key: { pk } }));
    expect(pk.startsWith('SIGNED#')).toBe(true);
    expect(Item).toMatchObject({ task_id: 'later', ttl: 720 });
  });

  it('releases only for the task that holds the key', async () => {
    await store.claim('key-3', 'holder', 0, DAY);
    await store.release('key-3', 'other');
    expect(await store.claim('key-3', 'retry', 1, DAY)).toBe('holder');
    await store.release('key-3', 'holder');
    expect(await store.claim('key-3', 'retry', 2, DAY)).toBe('retry');
  });

  it('a claim whose answer was lost (retried by the SDK) still answers its own task id: the failed condition is read back', async () => {
    const lossy = lostAnswerClient(db);
    try {
      const lossyStore = new DynamoDbIdempotencyStore(lossy.doc, db.tableName);
      lossy.loseNext('PutItem');
      expect(await lossyStore.claim('key-lost', 'mine', 1, DAY)).toBe('mine');
      expect(lossy.lost()).toBe(1);
      expect(await store.claim('key-lost', 'other', 2, DAY)).toBe('mine');
    } finally {
      lossy.close();
    }
  });
});
