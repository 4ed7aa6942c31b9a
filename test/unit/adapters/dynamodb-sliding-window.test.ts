import { GetItemCommand, type AttributeValue } from '@aws-sdk/client-dynamodb';
import { GetCommand } from '@aws-sdk/lib-dynamodb';
import { DynamoDbSlidingWindow } from '../../../lambdas/adapters/dynamodb/dynamodb-sliding-window';
import { relayEnvSchema } from '../../../lambdas/adapters/env';
import { REQUIRED_ENV } from '../../fakes/env';
import { RATE_WINDOW_MS } from '../../../lambdas/middleware/rate-limit';
import { RelayConfigSchema } from '../../../lib/config';
import { keys } from '../../../contract/resources';
import { startDynalite, type LocalDynamo } from '../../helpers/dynalite';
import { lostAnswerClient } from '../../helpers/lost-answer';
import { itemSize, writeUnits } from './dynamodb-item-size';

/** The zod upper bound (`.max()` / `z.lte()`) of a defaulted number setting, read from its checks (classic and zod/mini alike). */
const maxOf = (schema: { _zod: { def: { innerType: unknown } } }): number => {
  type CheckDef = { check: string; value?: number; inclusive?: boolean };
  const inner = schema._zod.def.innerType as { _zod: { def: { checks?: { _zod: { def: CheckDef } }[] } } };
  const bounds = (inner._zod.def.checks ?? [])
    .map((c) => c._zod.def)
    .filter((d) => d.check === 'less_than' && d.inclusive);
  return Math.min(...bounds.map((d) => d.value as number));
};

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
      Array.from({ length: 20 }, (_, i) =>
        window.hit(key, { now: 1_000_000 + i, windowMs: 60_000, limit: 10, eventId: `req-${i}` }),
      ),
    );
    // Assess
    expect(results.filter((r) => r.allowed)).toHaveLength(10);
    expect(results.filter((r) => !r.allowed).every((r) => r.retryAfterMs > 0)).toBe(true);
    const { Item } = await db.doc.send(
      new GetCommand({ TableName: db.tableName, Key: { pk: key }, ConsistentRead: true }),
    );
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
    const { Item } = await db.doc.send(
      new GetCommand({ TableName: db.tableName, Key: { pk: keys.rate('192.0.2.1') } }),
    );
    expect(Item?.ttl).toBeGreaterThanOrEqual(Math.ceil(65_000 / 1000));
  });

  describe('the largest window item, at the MAX_REQUESTS_PER_MINUTE cap', () => {
    const cap = maxOf(relayEnvSchema().shape.MAX_REQUESTS_PER_MINUTE);
    /** DynamoDB's write throughput limit of one partition key. */
    const PARTITION_WCU_PER_SECOND = 1_000;

    /** Fills one address's window to the cap through the adapter; returns the stored item's billed size. */
    const fillToCap = async (
      address: string,
      id: (i: number) => string,
    ): Promise<{ bytes: number; rejected: boolean }> => {
      const key = keys.rate(address);
      const t0 = Date.UTC(2026, 0, 1) + 123; // 13 significant digits, like every real epoch-ms
      for (let i = 0; i < cap; i += 1) {
        const hit = await window.hit(key, { now: t0 + i * 97, windowMs: RATE_WINDOW_MS, limit: cap, eventId: id(i) });
        expect(hit.allowed).toBe(true);
      }
      const over = await window.hit(key, {
        now: t0 + cap * 97,
        windowMs: RATE_WINDOW_MS,
        limit: cap,
        eventId: id(cap),
      });
      const { Item } = await db.doc.send(
        new GetItemCommand({ TableName: db.tableName, Key: { pk: { S: key } }, ConsistentRead: true }),
      );
      return { bytes: itemSize(Item as Record<string, AttributeValue>), rejected: !over.allowed };
    };

    it('caps the setting at 600 in the Lambda env and in the deploy config alike', () => {
      expect(cap).toBe(600);
      expect(maxOf(RelayConfigSchema.shape.maxRequestsPerMinute)).toBe(cap);
      expect(
        relayEnvSchema().safeParse({ ...REQUIRED_ENV, MAX_REQUESTS_PER_MINUTE: String(cap + 1) }).error?.issues[0]
          ?.message,
      ).toMatch(/MAX_REQUESTS_PER_MINUTE must be at most 600/);
    });

    it('stays small enough that an address at the limit never throttles its own key', async () => {
      // Worst case the relay produces: the longest textual IPv6 address and 36-character ids (UUIDs,
      // the fallback when a request has no id; API Gateway's own ids have 16 characters).
      const uuid = (i: number) => `00000000-0000-4000-8000-${String(i).padStart(12, '0')}`;
      const [worst, apiGateway] = await Promise.all([
        fillToCap('0000:0000:0000:0000:0000:ffff:255.255.255.255', uuid),
        fillToCap('203.0.113.250', (i) => `JgLkzjq4oAM${String(i).padStart(4, '0')}=`),
      ]);

      // The measured figures (bytes as DynamoDB bills them): about 89 and 49 bytes per event.
      expect(worst).toEqual({ bytes: 53_422, rejected: true });
      expect(apiGateway).toEqual({ bytes: 29_390, rejected: true });
      // An append at the cap writes 53 WCU at worst (29 with API Gateway ids; ~240 at the old 5,000),
      // so an address sending at the limit (cap / 60 = 10 per second) needs 530 WCU/s at worst:
      // about half of one partition key's 1,000 WCU/s, where 5,000 needed ~20,000 and was throttled.
      expect([writeUnits(worst.bytes), writeUnits(apiGateway.bytes)]).toEqual([53, 29]);
      expect((cap / 60) * writeUnits(worst.bytes)).toBeLessThan(PARTITION_WCU_PER_SECOND * 0.6);
      // 1,202 appends to items growing to 53 KB: ~20 s alone, over 60 s on a loaded 2-core machine.
      // The figures above are the test; the time it takes is not.
    }, 240_000);
  });

  it('a hit whose answer was lost (retried by the SDK) counts once: its event id is already recorded', async () => {
    const lossy = lostAnswerClient(db);
    try {
      const lossyWindow = new DynamoDbSlidingWindow(lossy.doc, db.tableName);
      lossy.loseNext('UpdateItem');
      expect(await lossyWindow.hit('RATE#lost', { now: 1_000, windowMs: 60_000, limit: 2, eventId: 'e1' })).toEqual({
        allowed: true,
        retryAfterMs: 0,
        count: 1,
      });
      expect(lossy.lost()).toBe(1);
      expect(await window.hit('RATE#lost', { now: 1_001, windowMs: 60_000, limit: 2, eventId: 'e2' })).toMatchObject({
        allowed: true,
        count: 2,
      });
    } finally {
      lossy.close();
    }
  });
});
