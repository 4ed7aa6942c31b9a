import { GetCommand } from '@aws-sdk/lib-dynamodb';
import { DynamoDbAvoidedHosts } from '../../../lambdas/adapters/dynamodb/dynamodb-avoided-hosts';
import { DynamoDbHostRecords } from '../../../lambdas/adapters/dynamodb/dynamodb-host-records';
import { ALL_HOSTS_VIEWER } from '../../../lambdas/domain/hosts/host-records';
import { startDynalite, type LocalDynamo } from '../../helpers/dynalite';

const NOW = Date.UTC(2026, 10, 27, 12);

describe('Adapter: DynamoDbHostRecords (dynalite)', () => {
  let db: LocalDynamo;
  let store: DynamoDbHostRecords;
  const recordOf = async (id: number) =>
    (await store.page(ALL_HOSTS_VIEWER, NOW, 100)).records.find((r) => r.server_id === id);
  beforeAll(async () => {
    db = await startDynalite();
    store = new DynamoDbHostRecords(db.doc, db.tableName, { afterFailures: 2, hours: 24 });
  });
  afterAll(async () => db.close());

  it('counts every one of concurrent outcomes on one host (optimistic writes retried)', async () => {
    await Promise.all(Array.from({ length: 4 }, () => store.record(11, { kind: 'placed' }, NOW)));
    expect((await recordOf(11))?.placed).toBe(4);
  });

  it("avoids a host at one key's second failed start for that key alone, with a TTL of 30 days", async () => {
    const avoidedHosts = new DynamoDbAvoidedHosts(db.doc, db.tableName);
    expect(await store.record(12, { kind: 'login_refused' }, NOW, 'ci')).toBeUndefined();
    expect([...(await avoidedHosts.avoided(NOW, 'ci'))]).not.toContain(12);
    const avoided = await store.record(12, { kind: 'login_refused' }, NOW + 1_000, 'ci');
    expect(avoided).toMatchObject({ by: 'auto', reason: '2 failed starts in 24 h (login refused)', key: 'ci' });
    expect([...(await avoidedHosts.avoided(NOW + 2_000, 'ci'))]).toContain(12);
    expect([...(await avoidedHosts.avoided(NOW + 2_000, 'other'))]).not.toContain(12);
    expect([...(await avoidedHosts.avoided(NOW + 25 * 3600_000, 'ci'))]).not.toContain(12);
    const item = await db.doc.send(new GetCommand({ TableName: db.tableName, Key: { pk: 'HOST#12' } }));
    expect(item.Item?.ttl).toBe(Math.floor((NOW + 1_000) / 1000) + 30 * 86_400);
    // A second key's failed start: every search leaves it out
    expect(await store.record(12, { kind: 'ssh_never_answered' }, NOW + 2_000, 'other')).toMatchObject({
      reason: '3 failed starts in 24 h by 2 keys (ssh never answered)',
    });
    expect([...(await avoidedHosts.avoided(NOW + 3_000, 'third'))]).toContain(12);
  });

  it('an operator clears an avoidance and the failed starts counted towards the next one', async () => {
    await store.setAvoidance(13, { until: Math.floor(NOW / 1000) + 3600, reason: 'operator', by: 'operator' }, NOW);
    expect(await store.avoided(NOW)).toContain(13);
    const cleared = await store.clear(13, NOW);
    expect(cleared?.avoided).toBeUndefined();
    expect(cleared?.failures).toEqual([]);
    expect(await store.avoided(NOW)).not.toContain(13);
  });

  it('clearing a host without a record creates none (issue 38)', async () => {
    expect(await store.clear(99_999, NOW)).toBeUndefined();
    const item = await db.doc.send(new GetCommand({ TableName: db.tableName, Key: { pk: 'HOST#99999' } }));
    expect(item.Item).toBeUndefined();
    expect((await store.page(ALL_HOSTS_VIEWER, NOW, 100)).records.map((r) => r.server_id)).not.toContain(99_999);
  });
});
