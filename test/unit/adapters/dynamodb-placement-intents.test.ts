import { DynamoDbPlacementIntents } from '../../../lambdas/adapters/dynamodb/dynamodb-placement-intents';
import { startDynalite, type LocalDynamo } from '../../helpers/dynalite';
import { lostAnswerClient } from '../../helpers/lost-answer';

describe('Adapter: DynamoDbPlacementIntents (dynalite)', () => {
  let db: LocalDynamo;
  let intents: DynamoDbPlacementIntents;
  beforeAll(async () => {
    db = await startDynalite();
    intents = new DynamoDbPlacementIntents(db.doc, db.tableName);
  });
  afterAll(async () => db.close());

  it('opens, lists oldest first and closes intents, concurrent writers included', async () => {
    const opened = Array.from({ length: 12 }, (_, i) => ({ task_id: `6f1c-${i}`, server_id: 100 + i, at: 5_000 - i }));
    await Promise.all(opened.map((i) => intents.open(i)));
    expect(await intents.list()).toEqual([...opened].sort((a, b) => a.at - b.at));
    await Promise.all(opened.slice(0, 6).map((i) => intents.close(i)));
    expect(await intents.list()).toEqual(opened.slice(6).sort((a, b) => a.at - b.at));
    await Promise.all(opened.slice(6).map((i) => intents.close(i)));
    expect(await intents.list()).toEqual([]);
  });

  it('gives an order to exactly one owner among concurrent claims; the holder may claim again', async () => {
    const owners = ['task:a', 'task:b', 'orphan', 'task:c'];
    const results = await Promise.all(owners.map((owner) => intents.claimOrder(77, owner, 1_000)));
    expect(results.filter(Boolean)).toHaveLength(1);
    const winner = owners[results.indexOf(true)]!;
    expect(await intents.claimOrder(77, winner, 2_000)).toBe(true);
    expect(
      await intents.claimOrder(
        77,
        owners.find((o) => o !== winner)!,
        2_000,
      ),
    ).toBe(false);
  });

  it('a claim whose answer was lost (retried by the SDK) is still its own', async () => {
    const lossy = lostAnswerClient(db);
    try {
      const lossyIntents = new DynamoDbPlacementIntents(lossy.doc, db.tableName);
      lossy.loseNext('PutItem');
      expect(await lossyIntents.claimOrder(78, 'orphan', 1)).toBe(true);
      expect(lossy.lost()).toBe(1);
      expect(await intents.claimOrder(78, 'task:x', 2)).toBe(false);
    } finally {
      lossy.close();
    }
  });
});
