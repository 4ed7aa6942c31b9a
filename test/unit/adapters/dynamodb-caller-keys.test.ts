/**
 * DynamoDbCallerKeys on dynalite (issue 24): concurrent creates of one name (exactly one wins), the
 * revocation reaching another instance within its cache TTL (the property, over random TTLs and
 * revocation times: never used past TTL after the revocation), and a new key found at once.
 */
import { GetCommand } from '@aws-sdk/lib-dynamodb';
import fc from 'fast-check';
import { DynamoDbCallerKeys } from '../../../lambdas/adapters/dynamodb/dynamodb-caller-keys';
import { keyUnusableReason, type CallerKeyRecord } from '../../../lambdas/domain/teams/caller-keys';
import { startDynalite, type LocalDynamo } from '../../helpers/dynalite';

const record = (name: string, secret = `sealed-${name}`): CallerKeyRecord => ({
  name,
  scopes: ['read'],
  secret,
  created_at: 1,
});

describe('Adapter: DynamoDbCallerKeys (dynalite)', () => {
  let db: LocalDynamo;
  beforeAll(async () => {
    db = await startDynalite();
  });
  afterAll(async () => db.close());

  it('adds a name once among concurrent creates, and never reuses a revoked name', async () => {
    const stores = Array.from({ length: 5 }, () => new DynamoDbCallerKeys(db.doc, db.tableName, 60));
    const results = await Promise.all(stores.map((s, i) => s.add(record('race', `secret-${i}`))));
    expect(results.filter(Boolean)).toHaveLength(1);
    expect(await stores[0].revoke('race', 10)).toBe('revoked');
    expect(await stores[1].revoke('race', 11)).toBe('already');
    expect(await stores[2].add(record('race'))).toBe(false);
    expect(await stores[3].revoke('never', 12)).toBe('unknown');
  });

  it("keeps a deleted key's name taken for 30 days, then forgets it (issue 38 §5: KEYS#all stays bounded)", async () => {
    const DAY = 86_400;
    const store = new DynamoDbCallerKeys(db.doc, db.tableName, 0);
    const cycle = async (name: string, at: number): Promise<void> => {
      expect(await store.add({ ...record(name), created_at: at })).toBe(true);
      expect(await store.revoke(name, at)).toBe('revoked');
      expect(await store.remove(name, at)).toBe('deleted');
    };
    await cycle('gone', 1_000 * DAY);
    await cycle('later', 1_010 * DAY);
    expect(await store.add({ ...record('gone'), created_at: 1_029 * DAY })).toBe(false);
    // Past 30 days: the next delete drops the name, and a create may use it again
    await cycle('trigger', 1_031 * DAY);
    const { Item } = await db.doc.send(new GetCommand({ TableName: db.tableName, Key: { pk: 'KEYS#all' } }));
    expect(Object.keys(Item?.deleted ?? {}).sort()).toEqual(['later', 'trigger']);
    expect(await store.add({ ...record('gone'), created_at: 1_031 * DAY })).toBe(true);
    expect(await store.add({ ...record('later'), created_at: 1_041 * DAY })).toBe(true);
  });

  it('finds a key created after its cache was filled at once (fresh read)', async () => {
    const reader = new DynamoDbCallerKeys(db.doc, db.tableName, 60);
    await reader.list();
    await new DynamoDbCallerKeys(db.doc, db.tableName, 60).add(record('fresh'));
    expect((await reader.list()).some((r) => r.name === 'fresh')).toBe(false);
    expect((await reader.list({ fresh: true })).some((r) => r.name === 'fresh')).toBe(true);
  });

  it('property: another instance refuses a revoked key no later than its cache TTL after the revocation', async () => {
    let n = 0;
    await fc.assert(
      fc.asyncProperty(
        fc.integer({ min: 0, max: 60 }),
        fc.integer({ min: 0, max: 120_000 }),
        fc.integer({ min: 0, max: 120_000 }),
        async (ttl, cachedAt, revokeAfter) => {
          n += 1;
          const name = `k${n}`;
          let clock = 1_000_000;
          const admin = new DynamoDbCallerKeys(db.doc, db.tableName, ttl, () => clock);
          await admin.add(record(name));
          // Another instance reads (caches) the key at some point...
          const other = new DynamoDbCallerKeys(db.doc, db.tableName, ttl, () => clock);
          clock += cachedAt;
          await other.list();
          // ...then the key is revoked, and later the other instance sees a request using it.
          clock += revokeAfter;
          const revokedAt = clock;
          await admin.revoke(name, Math.floor(revokedAt / 1000));
          clock += ttl * 1000;
          const seen = (await other.list()).find((r) => r.name === name);
          expect(keyUnusableReason(seen, Math.floor(clock / 1000))).toBe('revoked');
        },
      ),
      { numRuns: 25 },
    );
  });
});
