import { DynamoDbServerClaims } from '../../../lambdas/adapters/dynamodb/dynamodb-server-claims';
import { startDynalite, type LocalDynamo } from '../../helpers/dynalite';
import { lostAnswerClient } from '../../helpers/lost-answer';

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

  it('a claim or release whose answer was lost (retried by the SDK) keeps its outcome: the condition admits its own holder', async () => {
    const lossy = lostAnswerClient(db);
    try {
      const lossyClaims = new DynamoDbServerClaims(lossy.doc, db.tableName);
      lossy.loseNext('PutItem');
      expect(await lossyClaims.claim(41, 'mine', 1, 60)).toBe(true);
      expect(await claims.claim(41, 'other', 2, 60)).toBe(false);
      lossy.loseNext('DeleteItem');
      await lossyClaims.release(41, 'mine');
      expect(lossy.lost()).toBe(2);
      expect(await claims.claim(41, 'other', 3, 60)).toBe(true);
    } finally {
      lossy.close();
    }
  });
});
