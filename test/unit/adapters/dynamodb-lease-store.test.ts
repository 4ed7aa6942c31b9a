import { GetCommand, type DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import {
  LEASE_DUE_BUCKET_SECONDS,
  bucketStart,
  leaseKeys,
} from '../../../lambdas/adapters/dynamodb/dynamodb-lease-items';
import { DynamoDbLeaseStore } from '../../../lambdas/adapters/dynamodb/dynamodb-lease-store';
import { sweepFleet } from '../../../lambdas/domain/leases/fleet-watch';
import { startDynalite, type LocalDynamo } from '../../helpers/dynalite';
import { lostAnswerClient, type LostAnswerClient } from '../../helpers/lost-answer';
import { anOrder } from '../../fakes/builders';
import { FakeEventSender } from '../../fakes/event-sender';
import { FakeMarketplace } from '../../fakes/marketplace';
import { FakeNotifier } from '../../fakes/notifier';
import { seedLeases } from '../../fakes/seed-leases';

/** Counts what the table returns, independently of the store's own counter; `afterSend` injects interleavings. */
const countingClient = (doc: DynamoDBDocumentClient) => {
  const stats = { items: 0, requests: 0 };
  /** Runs after each send until it answers true. */
  let afterSend: ((input: Record<string, unknown>, name: string) => Promise<boolean>) | undefined;
  const client = {
    send: async (command: { input: Record<string, unknown>; constructor: { name: string } }) => {
      const out = (await doc.send(command as never)) as Record<string, unknown>;
      stats.requests += 1;
      if (out.Item) stats.items += 1;
      for (const items of Object.values((out.Responses as Record<string, unknown[]> | undefined) ?? {}))
        stats.items += items.length;
      if (afterSend && (await afterSend(command.input, command.constructor.name))) afterSend = undefined;
      return out;
    },
  } as unknown as DynamoDBDocumentClient;
  return {
    client,
    stats,
    once: (hook: typeof afterSend) => {
      afterSend = hook;
    },
  };
};

// A fixed base time at the start of a bucket, so bucket arithmetic in the tests is predictable.
const T0 = bucketStart(1_700_000_000) + 60;

/**
 * A fleet where one lease in ten is due, as in the bench's "1,000 leases of which 100 are due"
 * (BENCHMARKS.md §8, which also runs 4,000): O(due) means the reads stay at the due count plus a
 * constant whatever the rest of the fleet is. Seeding 1,000 leases into dynalite took 35 s per test.
 */
const FLEET = { total: 300, due: 30 } as const;

describe('Adapter: DynamoDbLeaseStore (dynalite)', () => {
  let db: LocalDynamo;
  beforeEach(async () => {
    db = await startDynalite();
  });
  afterEach(async () => db.close());

  const store = () => new DynamoDbLeaseStore(db.doc, db.tableName);

  it('tracks an order with its lease, once', async () => {
    const s = store();
    await s.track(
      { order_id: 1, task_id: 't1', callback_url: 'https://x.example', spot: true },
      { now: T0, status: 'running', lease: { expires_at: T0 + 3600, hours: 1 } },
    );
    await s.claimWarning(1, T0 + 3600);
    // A retried readiness step changes nothing (the warning stays recorded).
    await s.track(
      { order_id: 1, task_id: 'other' },
      { now: T0 + 5, status: 'creating_order', lease: { expires_at: T0 + 9999, hours: 9 } },
    );
    expect(await s.get(1)).toEqual({
      order_id: 1,
      task_id: 't1',
      callback_url: 'https://x.example',
      spot: true,
      expires_at: T0 + 3600,
      hours: 1,
      warned_for: T0 + 3600,
    });
    expect(await s.watched()).toEqual(new Map([[1, { status: 'running', since: T0, spot: true }]]));
    expect(await s.get(2)).toBeUndefined();
  });

  it('keeps what outbid recovery carries to a replacement order (issue 23)', async () => {
    const s = store();
    const order = {
      order_id: 3,
      task_id: 't1',
      spot: true,
      key: 'ci',
      on_outbid: 'replace' as const,
      max_price: 0.6,
      spend_task_id: 't1-r2',
    };
    await s.track(order, { now: T0, status: 'running' });
    expect(await s.get(3)).toEqual(order);
  });

  it('records the moment the relay cancelled an order once, and nothing for an order it does not track (issue 38 §9)', async () => {
    const s = store();
    await s.track({ order_id: 5, task_id: 't5' }, { now: T0, status: 'running' });
    await s.cancelled(5, T0 + 21.5);
    await s.cancelled(5, T0 + 40);
    await s.cancelled(6, T0 + 21.5);
    expect(await s.get(5)).toEqual({ order_id: 5, task_id: 't5', cancelled_at: T0 + 21.5 });
    expect((await s.getMany([5])).get(5)?.cancelled_at).toBe(T0 + 21.5);
    expect(await s.get(6)).toBeUndefined();
  });

  it(`finds the ${FLEET.due} due leases among ${FLEET.total} reading O(due) items`, async () => {
    // Prepare: FLEET.due leases ended within the last minute, the others ending 2 h to 2 days later.
    const seeding = store();
    await seedLeases(seeding, new FakeMarketplace(), { ...FLEET, now: T0 });
    const counted = countingClient(db.doc);
    const s = new DynamoDbLeaseStore(counted.client, db.tableName);
    // Act
    const due = await s.dueBefore(T0 + 600, FLEET.total);
    // Assess
    expect(due.map((l) => l.order_id).sort((a, b) => a - b)).toEqual(
      Array.from({ length: FLEET.due }, (_, i) => i + 1),
    );
    expect(due.every((l, i) => i === 0 || due[i - 1].expires_at <= l.expires_at)).toBe(true);
    // cursor + at most two buckets + the due lease items; never the others
    expect(counted.stats.items).toBeLessThanOrEqual(FLEET.due + 3);
    expect(counted.stats.items).toBeGreaterThanOrEqual(FLEET.due);
    expect(s.itemsRead()).toBe(counted.stats.items);
  });

  it('returns at most `limit` leases, earliest first, and the rest on the next call', async () => {
    const s = store();
    for (const [id, end] of [
      [1, T0 - 30],
      [2, T0 - 20],
      [3, T0 - 10],
    ] as const) {
      await s.track(
        { order_id: id, task_id: `t${id}` },
        { now: T0 - 3600, status: 'running', lease: { expires_at: end, hours: 1 } },
      );
    }
    expect((await s.dueBefore(T0, 2)).map((l) => l.order_id)).toEqual([1, 2]);
    await s.endLease(1, 'cancelled', T0);
    await s.endLease(2, 'cancelled', T0);
    expect((await s.dueBefore(T0, 2)).map((l) => l.order_id)).toEqual([3]);
  });

  it('moves the due entry when a lease is extended', async () => {
    const s = store();
    const end = T0 + 300;
    await s.track({ order_id: 7, task_id: 't7' }, { now: T0, status: 'running', lease: { expires_at: end, hours: 1 } });
    const newEnd = end + 3 * 3600;
    expect(
      await s.extend(
        { order_id: 7, task_id: 'x' },
        { expectedEnd: end, expiresAt: newEnd, addHours: 3 },
        { now: T0, status: 'running' },
      ),
    ).toBe(true);

    const oldBucket = await db.doc.send(
      new GetCommand({ TableName: db.tableName, Key: { pk: leaseKeys.due(bucketStart(end)) } }),
    );
    const newBucket = await db.doc.send(
      new GetCommand({ TableName: db.tableName, Key: { pk: leaseKeys.due(bucketStart(newEnd)) } }),
    );
    expect(Object.keys(oldBucket.Item ?? {}).filter((k) => k.startsWith('d'))).toEqual([]);
    expect(newBucket.Item?.[`d7_${newEnd}`]).toBe(newEnd);
    expect(await s.dueBefore(end + 600, 10)).toEqual([]);
    expect((await s.dueBefore(newEnd, 10)).map((l) => [l.order_id, l.expires_at, l.hours, l.task_id])).toEqual([
      [7, newEnd, 4, 't7'],
    ]);
  });

  it('refuses an extension that lost a race, and a stale expectation', async () => {
    const s = store();
    await s.track(
      { order_id: 7, task_id: 't7' },
      { now: T0, status: 'running', lease: { expires_at: T0 + 100, hours: 1 } },
    );
    const results = await Promise.all(
      [1, 2].map((h) =>
        s.extend(
          { order_id: 7, task_id: 'x' },
          { expectedEnd: T0 + 100, expiresAt: T0 + 100 + h * 3600, addHours: h },
          { now: T0, status: 'running' },
        ),
      ),
    );
    expect(results.filter(Boolean)).toHaveLength(1);
    // The loser's entry is stale; the due query returns the lease once, at its real end.
    const lease = await s.get(7);
    const due = await s.dueBefore(T0 + 3 * 3600, 10);
    expect(due).toHaveLength(1);
    expect(due[0].expires_at).toBe((lease as { expires_at: number }).expires_at);
  });

  it('creates a lease for an order without one, and watches it', async () => {
    const s = store();
    expect(
      await s.extend(
        { order_id: 9, task_id: 'ext', callback_url: 'https://cb.example' },
        { expectedEnd: undefined, expiresAt: T0 + 3600, addHours: 1 },
        { now: T0, status: 'running' },
      ),
    ).toBe(true);
    expect(await s.get(9)).toEqual({
      order_id: 9,
      task_id: 'ext',
      callback_url: 'https://cb.example',
      expires_at: T0 + 3600,
      hours: 1,
    });
    expect((await s.watched()).get(9)).toEqual({ status: 'running', since: T0, spot: false });
    expect(
      await s.extend(
        { order_id: 9, task_id: 'ext' },
        { expectedEnd: undefined, expiresAt: T0 + 7200, addHours: 2 },
        { now: T0, status: 'running' },
      ),
    ).toBe(false);
  });

  it('claims a warning once per end', async () => {
    const s = store();
    await s.track(
      { order_id: 1, task_id: 't' },
      { now: T0, status: 'running', lease: { expires_at: T0 + 100, hours: 1 } },
    );
    const claims = await Promise.all([
      s.claimWarning(1, T0 + 100),
      s.claimWarning(1, T0 + 100),
      s.claimWarning(1, T0 + 100),
    ]);
    expect(claims.filter(Boolean)).toHaveLength(1);
    expect(await s.claimWarning(1, T0 + 50)).toBe(false); // not the current end
  });

  it('lets one of many concurrent callers claim the cancel; a stale claim lapses; release only by its holder', async () => {
    const s = store();
    await s.track({ order_id: 1, task_id: 't' }, { now: T0, status: 'running', lease: { expires_at: T0, hours: 1 } });
    const claims = await Promise.all(Array.from({ length: 6 }, () => s.claimCancel(1, T0, T0 + 10, 300)));
    expect(claims.filter(Boolean)).toHaveLength(1);
    await s.releaseCancel(1, T0 + 11); // not the claim's time: no effect
    expect(await s.claimCancel(1, T0, T0 + 20, 300)).toBe(false);
    expect(await s.claimCancel(1, T0, T0 + 310, 300)).toBe(true);
    await s.releaseCancel(1, T0 + 310);
    expect(await s.claimCancel(1, T0, T0 + 311, 300)).toBe(true);
    expect(await s.endLease(1, 'cancelled', T0 + 312, T0)).toBe(true);
    expect(await s.endLease(1, 'cancelled', T0 + 313, T0)).toBe(false);
    expect(await s.claimCancel(1, T0, T0 + 999, 300)).toBe(false);
    expect(await s.get(1)).toMatchObject({ ended: 'cancelled' });
    expect(await s.dueBefore(T0 + 999, 10)).toEqual([]);
  });

  it('cancels exactly once under two concurrent sweeps with separate store instances', async () => {
    const market = new FakeMarketplace();
    await seedLeases(store(), market, { total: 60, due: 20, now: T0 });
    const notifier = new FakeNotifier();
    const events = new FakeEventSender();
    const sweep = (now: number) => sweepFleet({ leases: store(), marketplace: market, notifier, events }, { now });
    const [a, b] = await Promise.all([sweep(T0), sweep(T0 + 1)]);
    expect(market.cancelCalls.sort((x, y) => x - y)).toEqual(Array.from({ length: 20 }, (_, i) => i + 1));
    expect(a.cancelled + b.cancelled).toBe(20);
    expect(events.sent).toHaveLength(20);
    expect(new Set(events.sent.map((e) => e.id)).size).toBe(20);
    // And the next sweep finds nothing due and nothing changed.
    const after = await sweep(T0 + 60);
    expect(after).toMatchObject({ due: 0, cancelled: 0, statusChanges: 0 });
    expect(market.cancelCalls).toHaveLength(20);
  });

  it(`sweeps ${FLEET.total} leases of which ${FLEET.due} are due: ${FLEET.due + 1} marketplace calls and O(due) table reads`, async () => {
    const market = new FakeMarketplace();
    await seedLeases(store(), market, { ...FLEET, now: T0 });
    const counted = countingClient(db.doc);
    const report = await sweepFleet(
      {
        leases: new DynamoDbLeaseStore(counted.client, db.tableName),
        marketplace: market,
        notifier: new FakeNotifier(),
        events: new FakeEventSender(),
      },
      { now: T0 },
    );
    expect(report).toMatchObject({
      due: FLEET.due,
      cancelled: FLEET.due,
      failedCancels: 0,
      marketplaceCalls: FLEET.due + 1,
      eventsSent: FLEET.due,
    });
    // cursor + buckets + the due leases + the watch item (one item, however many orders it lists)
    expect(report.tableReads).toBeLessThanOrEqual(FLEET.due + 5);
    expect(counted.stats.items).toBe(report.tableReads);
  });

  it('never skips an entry written into a bucket a sweep has just read', async () => {
    const counted = countingClient(db.doc);
    const s = new DynamoDbLeaseStore(counted.client, db.tableName);
    const other = store();
    // The cursor sits at T0's bucket, which is empty again.
    await other.track(
      { order_id: 1, task_id: 't1' },
      { now: T0, status: 'running', lease: { expires_at: T0 + 10, hours: 1 } },
    );
    await other.endLease(1, 'cancelled', T0);
    // Right after the sweep read the buckets, another writer tracks a lease in T0's bucket: the sweep
    // saw nothing there and would like to move the cursor 4 buckets up, past the new entry.
    counted.once(async (_input, name) => {
      if (name !== 'BatchGetCommand') return false;
      await other.track(
        { order_id: 2, task_id: 't2' },
        { now: T0, status: 'running', lease: { expires_at: T0 + 30, hours: 1 } },
      );
      return true;
    });
    expect(await s.dueBefore(T0 + 4 * LEASE_DUE_BUCKET_SECONDS, 10)).toEqual([]);
    expect((await s.dueBefore(T0 + 60, 10)).map((l) => l.order_id)).toEqual([2]);
  });

  it('lowers the cursor for a lease ending before it', async () => {
    const s = store();
    await s.track(
      { order_id: 1, task_id: 't1' },
      { now: T0, status: 'running', lease: { expires_at: T0 + 10 * LEASE_DUE_BUCKET_SECONDS, hours: 3 } },
    );
    await s.endLease(1, 'cancelled', T0);
    expect(await s.dueBefore(T0 + 20 * LEASE_DUE_BUCKET_SECONDS, 10)).toEqual([]); // cursor moves up
    await s.track(
      { order_id: 2, task_id: 't2' },
      { now: T0, status: 'running', lease: { expires_at: T0 + 100, hours: 0.1 } },
    );
    expect((await s.dueBefore(T0 + 200, 10)).map((l) => l.order_id)).toEqual([2]);
  });

  it('prunes a due entry left behind by an interrupted extension', async () => {
    const s = store();
    await s.track(
      { order_id: 1, task_id: 't1' },
      { now: T0, status: 'running', lease: { expires_at: T0 + 50, hours: 1 } },
    );
    // As if an extension crashed after moving the lease but before removing the old entry.
    await s.extend(
      { order_id: 1, task_id: 't1' },
      { expectedEnd: T0 + 50, expiresAt: T0 + 9000, addHours: 2.5 },
      { now: T0, status: 'running' },
    );
    await s.track(
      { order_id: 3, task_id: 't3' },
      { now: T0, status: 'running', lease: { expires_at: T0 + 40, hours: 1 } },
    );
    const { UpdateCommand } = await import('@aws-sdk/lib-dynamodb');
    await db.doc.send(
      new UpdateCommand({
        TableName: db.tableName,
        Key: { pk: leaseKeys.due(bucketStart(T0 + 50)) },
        UpdateExpression: 'SET #a = :v',
        ExpressionAttributeNames: { '#a': `d1_${T0 + 50}` },
        ExpressionAttributeValues: { ':v': T0 + 50 },
      }),
    );
    expect((await s.dueBefore(T0 + 100, 10)).map((l) => l.order_id)).toEqual([3]);
    const bucket = await db.doc.send(
      new GetCommand({ TableName: db.tableName, Key: { pk: leaseKeys.due(bucketStart(T0 + 50)) } }),
    );
    expect(bucket.Item?.[`d1_${T0 + 50}`]).toBeUndefined();
  });

  it('changes a watched status only from the expected one, and stops watching', async () => {
    const s = store();
    await s.track({ order_id: 1, task_id: 't1' }, { now: T0, status: 'running' });
    const prev = { status: 'running', since: T0, spot: false };
    const results = await Promise.all([
      s.setStatus(1, prev, { status: 'paused', since: T0 + 60, spot: false }, T0 + 60),
      s.setStatus(1, prev, { status: 'paused', since: T0 + 61, spot: false }, T0 + 61),
    ]);
    expect(results.filter(Boolean)).toHaveLength(1);
    const now = (await s.watched()).get(1);
    expect(now?.status).toBe('paused');
    expect(await s.setStatus(1, now!, undefined, T0 + 120)).toBe(true);
    expect((await s.watched()).has(1)).toBe(false);
    const item = await db.doc.send(new GetCommand({ TableName: db.tableName, Key: { pk: leaseKeys.lease(1) } }));
    expect(item.Item?.ttl).toBeGreaterThan(T0 + 120); // the record ages out
  });

  it('claims each event id once', async () => {
    const s = store();
    const claims = await Promise.all(Array.from({ length: 5 }, () => s.claimEvent('lease_expired:1:100', T0)));
    expect(claims.filter(Boolean)).toHaveLength(1);
    expect(await s.claimEvent('lease_expired:1:100', T0 + 999)).toBe(false);
    expect(await s.claimEvent('lease_expired:1:200', T0)).toBe(true);
  });

  it('claims a spot price decrease once per 600 s and forgets a released one', async () => {
    const s = store();
    expect(await s.claimSpotDecrease(6, T0, 600)).toEqual({ claimed: true });
    expect(await s.claimSpotDecrease(6, T0 + 100, 600)).toEqual({ claimed: false, last_at: T0 });
    expect(await s.claimSpotDecrease(6, T0 + 600, 600)).toEqual({ claimed: true });
    await s.releaseSpotDecrease(6, T0); // not the current claim
    expect(await s.claimSpotDecrease(6, T0 + 601, 600)).toEqual({ claimed: false, last_at: T0 + 600 });
    await s.releaseSpotDecrease(6, T0 + 600);
    expect(await s.claimSpotDecrease(6, T0 + 602, 600)).toEqual({ claimed: true });
  });

  it('reports status changes from the table on the next sweep', async () => {
    const market = new FakeMarketplace();
    const s = store();
    await s.track(
      { order_id: 4, task_id: 't4', callback_url: 'https://cb.example', spot: true },
      { now: T0, status: 'running', lease: { expires_at: T0 + 86_400, hours: 24 } },
    );
    market.orders = [anOrder(4, { status: 'paused', type: 'spot' })];
    const notifier = new FakeNotifier();
    const events = new FakeEventSender();
    await sweepFleet({ leases: s, marketplace: market, notifier, events }, { now: T0 + 60 });
    await sweepFleet({ leases: s, marketplace: market, notifier, events }, { now: T0 + 120 });
    expect(notifier.chats).toEqual(['Order 4 is now paused (was running): spot order, possibly outbid']);
    expect(events.sent.map((e) => e.event)).toEqual([
      {
        event: 'order.status_changed',
        order_id: 4,
        task_id: 't4',
        occurred_at: T0 + 60,
        lease_expires_at: T0 + 86_400,
        from: 'running',
        to: 'paused',
      },
    ]);
  });

  describe('a claim that landed but whose answer was lost (the SDK retries it and fails its own condition)', () => {
    let lossy: LostAnswerClient;
    beforeEach(() => {
      lossy = lostAnswerClient(db);
    });
    afterEach(() => lossy.close());
    const lossyStore = () => new DynamoDbLeaseStore(lossy.doc, db.tableName);
    /** Loses the next answer of `operation` whose input mentions `text` (a key prefix or attribute of that claim). */
    const loseWriteOf = (operation: string, text: string) =>
      lossy.loseNext(operation, 1, (input) => JSON.stringify(input).includes(text));

    it('claimEvent is still the one claim: the event is sent, by this caller only', async () => {
      loseWriteOf('PutItem', 'LEASE_EVENT#');
      expect(await lossyStore().claimEvent('lease_expired:1:100', T0)).toBe(true);
      expect(lossy.lost()).toBe(1);
      expect(await store().claimEvent('lease_expired:1:100', T0)).toBe(false);
    });

    it('claimWarning is still the one claim for this end', async () => {
      await store().track(
        { order_id: 1, task_id: 't' },
        { now: T0, status: 'running', lease: { expires_at: T0 + 100, hours: 1 } },
      );
      loseWriteOf('UpdateItem', 'warned_for');
      expect(await lossyStore().claimWarning(1, T0 + 100)).toBe(true);
      expect(lossy.lost()).toBe(1);
      expect(await store().claimWarning(1, T0 + 100)).toBe(false);
    });

    it('claimCancel is still the one claim: the lease is cancelled now, not after the claim goes stale', async () => {
      await store().track(
        { order_id: 1, task_id: 't' },
        { now: T0, status: 'running', lease: { expires_at: T0, hours: 1 } },
      );
      loseWriteOf('UpdateItem', 'cancel_claimed_at');
      expect(await lossyStore().claimCancel(1, T0, T0 + 10, 300)).toBe(true);
      expect(lossy.lost()).toBe(1);
      expect(await store().claimCancel(1, T0, T0 + 11, 300)).toBe(false);
    });

    it('extend reports its landed extension, so the job does not extend the lease a second time', async () => {
      const end = T0 + 300;
      await store().track(
        { order_id: 7, task_id: 't7' },
        { now: T0, status: 'running', lease: { expires_at: end, hours: 1 } },
      );
      const newEnd = end + 2 * 3600;
      loseWriteOf('UpdateItem', '"hours"');
      expect(
        await lossyStore().extend(
          { order_id: 7, task_id: 't7' },
          { expectedEnd: end, expiresAt: newEnd, addHours: 2 },
          { now: T0, status: 'running' },
        ),
      ).toBe(true);
      expect(lossy.lost()).toBe(1);
      expect(await store().get(7)).toMatchObject({ expires_at: newEnd, hours: 3 });
      // The old due entry moved with the lease, as after an answered extension.
      const oldBucket = await db.doc.send(
        new GetCommand({ TableName: db.tableName, Key: { pk: leaseKeys.due(bucketStart(end)) } }),
      );
      expect(Object.keys(oldBucket.Item ?? {}).filter((k) => k.startsWith('d'))).toEqual([]);
      // A genuine race loser still gets false.
      expect(
        await store().extend(
          { order_id: 7, task_id: 't7' },
          { expectedEnd: end, expiresAt: newEnd, addHours: 2 },
          { now: T0, status: 'running' },
        ),
      ).toBe(false);
    });

    it('claimSpotDecrease is still claimed, not refused as "lowered recently" by its own claim', async () => {
      loseWriteOf('PutItem', 'SPOT_DECREASE#');
      expect(await lossyStore().claimSpotDecrease(6, T0, 600)).toEqual({ claimed: true });
      expect(lossy.lost()).toBe(1);
      expect(await store().claimSpotDecrease(6, T0 + 1, 600)).toEqual({ claimed: false, last_at: T0 });
    });

    it('setStatus still reports the change it made (and a removal), so the change is announced', async () => {
      await store().track({ order_id: 1, task_id: 't1' }, { now: T0, status: 'running' });
      const prev = { status: 'running', since: T0, spot: false };
      const next = { status: 'paused', since: T0 + 60, spot: false };
      loseWriteOf('UpdateItem', ':prev');
      expect(await lossyStore().setStatus(1, prev, next, T0 + 60)).toBe(true);
      expect(await store().setStatus(1, prev, next, T0 + 60)).toBe(false);
      loseWriteOf('UpdateItem', ':prev');
      expect(await lossyStore().setStatus(1, next, undefined, T0 + 120)).toBe(true);
      expect(lossy.lost()).toBe(2);
      expect((await store().watched()).has(1)).toBe(false);
      const item = await db.doc.send(new GetCommand({ TableName: db.tableName, Key: { pk: leaseKeys.lease(1) } }));
      expect(item.Item?.ttl).toBeGreaterThan(T0 + 120);
    });

    it('a sweep whose cancel claim loses its answer cancels the lease once, in this sweep, and sends its event once', async () => {
      const market = new FakeMarketplace();
      await seedLeases(store(), market, { total: 1, due: 1, now: T0 });
      const notifier = new FakeNotifier();
      const events = new FakeEventSender();
      loseWriteOf('UpdateItem', 'cancel_claimed_at');
      const first = await sweepFleet({ leases: lossyStore(), marketplace: market, notifier, events }, { now: T0 });
      expect(lossy.lost()).toBe(1);
      expect(first).toMatchObject({ cancelled: 1, skippedClaims: 0 });
      expect(market.cancelCalls).toHaveLength(1);
      expect(events.sent).toHaveLength(1);
      const again = await sweepFleet({ leases: store(), marketplace: market, notifier, events }, { now: T0 + 60 });
      expect(again).toMatchObject({ cancelled: 0 });
      expect(market.cancelCalls).toHaveLength(1);
      expect(events.sent).toHaveLength(1);
    });
  });
});
