import { GetCommand } from '@aws-sdk/lib-dynamodb';
import { DynamoDbAvoidedHosts } from '../../../lambdas/adapters/dynamodb/dynamodb-avoided-hosts';
import { DynamoDbHostRecords } from '../../../lambdas/adapters/dynamodb/dynamodb-host-records';
import { startDynalite, type LocalDynamo } from '../../helpers/dynalite';

const NOW = Date.UTC(2026, 10, 27, 12);

describe('Adapter: DynamoDbHostRecords (dynalite)', () => {
  let db: LocalDynamo;
  let store: DynamoDbHostRecords;
  beforeAll(async () => {
    db = await startDynalite();
    store = new DynamoDbHostRecords(db.doc, db.tableName, { afterFailures: 2, hours: 24 });
  });
  afterAll(async () => db.close());

  it('counts every one of concurrent outcomes on one host (optimistic writes retried)', async () => {
    await Promise.all(Array.from({ length: 4 }, () => store.record(11, { kind: 'placed' }, NOW)));
    const [record] = (await store.list()).filter((r) => r.server_id === 11);
    expect(record?.placed).toBe(4);
  });

  it('avoids a host at its second failed start, for every search, with a TTL of 30 days', async () => {
    const avoidedHosts = new DynamoDbAvoidedHosts(db.doc, db.tableName);
    expect(await store.record(12, { kind: 'login_refused' }, NOW)).toBeUndefined();
    expect([...(await avoidedHosts.avoided(NOW))]).not.toContain(12);
    const avoided = await store.record(12, { kind: 'login_refused' }, NOW + 1_000);
    expect(avoided).toMatchObject({ by: 'auto', reason: '2 failed starts in 24 h (login refused)' });
    expect([...(await avoidedHosts.avoided(NOW + 2_000))]).toContain(12);
    expect([...(await avoidedHosts.avoided(NOW + 25 * 3600_000))]).not.toContain(12);
    const item = await db.doc.send(new GetCommand({ TableName: db.tableName, Key: { pk: 'HOST#12' } }));
    expect(item.Item?.ttl).toBe(Math.floor((NOW + 1_000) / 1000) + 30 * 86_400);
  });

  it('an operator clears an avoidance and the failed starts counted towards the next one', async () => {
    await store.setAvoidance(13, { until: Math.floor(NOW / 1000) + 3600, reason: 'operator', by: 'operator' }, NOW);
    expect(await store.avoided(NOW)).toContain(13);
    const cleared = await store.setAvoidance(13, undefined, NOW);
    expect(cleared.avoided).toBeUndefined();
    expect(cleared.failures).toEqual([]);
    expect(await store.avoided(NOW)).not.toContain(13);
  });
});
