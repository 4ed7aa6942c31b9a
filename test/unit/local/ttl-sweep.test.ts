/**
 * The local TTL (dynalite has none): expired items are deleted, live ones and items without a ttl
 * stay, and a week of idle expiry leaves the table no bigger than what is still alive.
 */
import { PutCommand, ScanCommand } from '@aws-sdk/lib-dynamodb';
import { createTtlSweeper } from '../../../local/ttl-sweep';
import { startDynalite, type LocalDynamo } from '../../helpers/dynalite';

describe('Function: createTtlSweeper', () => {
  let dynamo: LocalDynamo;
  beforeAll(async () => {
    dynamo = await startDynalite();
  });
  afterAll(async () => {
    await dynamo?.close();
  });

  it('deletes expired items only, page after page', async () => {
    // Prepare: 300 windows expiring over a simulated week, 5 keys without ttl, 5 items expiring next month
    const start = Date.UTC(2026, 0, 1) / 1000;
    const week = 7 * 24 * 3600;
    for (let i = 0; i < 300; i += 1)
      await dynamo.doc.send(
        new PutCommand({
          TableName: dynamo.tableName,
          Item: { pk: `RATE#10.0.0.${i}`, hits: [1, 2, 3], ttl: start + Math.floor((i * week) / 300) },
        }),
      );
    for (let i = 0; i < 5; i += 1)
      await dynamo.doc.send(new PutCommand({ TableName: dynamo.tableName, Item: { pk: `KEY#k${i}`, budget: 5 } }));
    for (let i = 0; i < 5; i += 1)
      await dynamo.doc.send(
        new PutCommand({ TableName: dynamo.tableName, Item: { pk: `LEASE#o${i}`, ttl: start + 5 * week } }),
      );
    let nowMs = start * 1000;
    const sweeper = createTtlSweeper({ endpoint: dynamo.endpoint, tableName: dynamo.tableName, now: () => nowMs });

    // Act: a sweep at the start of the week, one mid-week, one a week later
    const atStart = await sweeper.sweep();
    nowMs = (start + week / 2) * 1000;
    const midWeek = await sweeper.sweep();
    nowMs = (start + week + 1) * 1000;
    const atEnd = await sweeper.sweep();
    sweeper.close();

    // Assert
    expect(atStart.deleted).toBe(0);
    expect(midWeek.deleted).toBe(150);
    expect(atEnd.deleted).toBe(150);
    const left = await dynamo.doc.send(new ScanCommand({ TableName: dynamo.tableName }));
    expect((left.Items ?? []).map((item) => String(item.pk)).sort()).toEqual([
      ...[0, 1, 2, 3, 4].map((i) => `KEY#k${i}`),
      ...[0, 1, 2, 3, 4].map((i) => `LEASE#o${i}`),
    ]);
  });
});
