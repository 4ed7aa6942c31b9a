import { GetCommand } from '@aws-sdk/lib-dynamodb';
import { DynamoDbSlidingWindow } from '../../../lambdas/adapters/dynamodb-sliding-window';
import { keys } from '../../../lib/relay-resources';
import { startDynalite, type LocalDynamo } from '../../helpers/dynalite';

describe('Adapter: DynamoDbSlidingWindow (dynalite)', () => {
  let db: LocalDynamo;
  let window: DynamoDbSlidingWindow;
  beforeAll(async () => {
    db = await startDynalite();
    window = new DynamoDbSlidingWindow(db.doc, db.tableName);
  });
  afterAll(async () => db.close());

  it('admits exactly the limit when 20 hits race on one key', async () => {
    // Prepare
    const key = keys.rate('203.0.113.7');
    // Act
    const results = await Promise.all(
      Array.from({ length: 20 }, (_, i) => window.hit(key, { now: 1_000_000 + i, windowMs: 60_000, limit: 10, eventId: `req-${i}` })),
    );
    // Assess
    expect(results.filter((r) => r.allowed)).toHaveLength(10);
    expect(results.filter((r) => !r.allowed).every((r) => r.retryAfterMs > 0)).toBe(true);
    const { Item } = await db.doc.send(new GetCommand({ TableName: db.tableName, Key: { pk: key }, ConsistentRead: true }));
    expect(Item?.events).toHaveLength(10);
  });

  it('does not record rejected hits, so the window reopens on time', async () => {
    // Prepare
    const key = keys.rate('198.51.100.1');
    const opts = (now: number, eventId: string) => ({ now, windowMs: 1_000, limit: 2, eventId });
    await window.hit(key, opts(0, 'a'));
    await window.hit(key, opts(500, 'b'));
    // Act
    const rejected = await window.hit(key, opts(900, 'c'));
    const later = await window.hit(key, opts(1_001, 'd'));
    // Assess
    expect(rejected).toEqual({ allowed: false, retryAfterMs: 100, count: 2 });
    expect(later.allowed).toBe(true);
    expect(later.count).toBe(2);
  });

  it('counts a repeat once on the append path too, and prunes expired events once the list is full', async () => {
    // Prepare
    const key = keys.rate('198.51.100.9');
    const hit = (now: number, id: string) => window.hit(key, { now, windowMs: 1_000, limit: 3, eventId: id });
    // Act: the list is not full, so these go through the conditional append
    const results = [await hit(0, 'a'), await hit(10, 'a'), await hit(20, 'b'), await hit(30, 'c'), await hit(40, 'd')];
    // ... and after the window the full list (a, b, c: all expired) is pruned by the slow path
    const afterWindow = [await hit(1_100, 'e'), await hit(1_110, 'f'), await hit(1_120, 'g'), await hit(1_130, 'h')];
    // Assess
    expect(results.map((r) => r.allowed)).toEqual([true, true, true, true, false]);
    expect(afterWindow.map((r) => r.allowed)).toEqual([true, true, true, false]);
  });

  it('counts a repeated event id once', async () => {
    const key = keys.quota();
    const first = await window.hit(key, { now: 10, windowMs: 3_600_000, limit: 1, eventId: 'task-1' });
    const repeat = await window.hit(key, { now: 20, windowMs: 3_600_000, limit: 1, eventId: 'task-1' });
    const other = await window.hit(key, { now: 30, windowMs: 3_600_000, limit: 1, eventId: 'task-2' });
    expect([first.allowed, repeat.allowed, other.allowed]).toEqual([true, true, false]);
  });

  it('keeps keys independent and sets a ttl after the window', async () => {
    const a = await window.hit(keys.rate('192.0.2.1'), { now: 5_000, windowMs: 60_000, limit: 1, eventId: 'x' });
    const b = await window.hit(keys.rate('192.0.2.2'), { now: 5_000, windowMs: 60_000, limit: 1, eventId: 'x' });
    expect([a.allowed, b.allowed]).toEqual([true, true]);
    const { Item } = await db.doc.send(new GetCommand({ TableName: db.tableName, Key: { pk: keys.rate('192.0.2.1') } }));
    expect(Item?.ttl).toBeGreaterThanOrEqual(Math.ceil(65_000 / 1000));
  });
});
