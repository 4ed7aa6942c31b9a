import { DynamoDbServerClaims } from '../../../lambdas/adapters/dynamodb-server-claims';
import { startDynalite, type LocalDynamo } from '../../helpers/dynalite';

describe('Adapter: DynamoDbServerClaims (dynalite)', () => {
  let db: LocalDynamo;
  let claims: DynamoDbServerClaims;
  beforeAll(async () => {
    db = await startDynalite();
    claims = new DynamoDbServerClaims(db.doc, db.tableName);
  });
  afterAll(async () => db.close());

  it('gives a free server to exactly one of many concurrent tasks', async () => {
    const results = await Promise.all(Array.from({ length: 8 }, (_, i) => claims.claim(1, `t${i}`, 1_000, 60)));
    expect(results.filter(Boolean)).toHaveLength(1);
  });

  it('lets the holder claim again, and another task only after expiry', async () => {
    expect(await claims.claim(2, 'a', 0, 10)).toBe(true);
    expect(await claims.claim(2, 'a', 5_000, 10)).toBe(true);
    expect(await claims.claim(2, 'b', 14_999, 10)).toBe(false);
    expect(await claims.claim(2, 'b', 15_000, 10)).toBe(true);
  });

  it('releases only its own claim', async () => {
    await claims.claim(3, 'owner', 0, 60);
    await claims.release(3, 'intruder');
    expect(await claims.claim(3, 'other', 1, 60)).toBe(false);
    await claims.release(3, 'owner');
    expect(await claims.claim(3, 'other', 2, 60)).toBe(true);
  });
});
