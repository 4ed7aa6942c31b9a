/**
 * The lease book in the relay table (LeaseBook): what the job worker and the workflow use. The items it
 * writes are described in dynamodb-lease-items.ts; the sweep's part is dynamodb-lease-store.ts.
 */
import { randomUUID } from 'node:crypto';
import { BatchGetCommand, GetCommand, UpdateCommand, type DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import type { TrackedOrder, WatchedOrder, WatchEntry } from '../../domain/leases/lease';
import type { LeaseBook, LeaseTerms, SpotDecreaseClaim } from '../../domain/leases/lease-ports';
import {
  BATCH_GET_LIMIT,
  bucketStart,
  CLAIM_TOKEN,
  dueAttribute,
  encodeWatch,
  leaseKeys,
  putClaim,
  setOrderOptions,
  storedToken,
  toTracked,
  TTL_ATTRIBUTE,
  updateCursor,
  wait,
  watchAttribute,
} from './dynamodb-lease-items';
import { removeEntry } from './dynamodb-entry-attributes';
import { deleteItem, putItem, updateItem } from './dynamodb-item-writes';

/**
 * The lease book in the relay table: what the job worker and the workflow use. The sweep's methods
 * are in DynamoDbLeaseStore (dynamodb-lease-store.ts), so a bundle that only constructs this class
 * leaves them out (esbuild cannot drop single methods of a class, only whole classes and module
 * functions).
 */
export class DynamoDbLeaseBook implements LeaseBook {
  protected reads = 0;

  public constructor(
    protected readonly doc: DynamoDBDocumentClient,
    protected readonly tableName: string,
  ) {}

  public itemsRead(): number {
    return this.reads;
  }

  public async track(order: WatchedOrder, opts: { now: number; status: string; lease?: LeaseTerms }): Promise<void> {
    if (opts.lease) await this.addDueEntry(order.order_id, opts.lease.expires_at);
    await putItem(
      this.doc,
      this.tableName,
      {
        pk: leaseKeys.lease(order.order_id),
        order_id: order.order_id,
        task_id: order.task_id,
        ...setOrderOptions(order),
        ...(opts.lease ? { expires_at: opts.lease.expires_at, hours: opts.lease.hours } : {}),
      },
      // A retried readiness step must not reset warnings, claims or an extension made since.
      { ConditionExpression: 'attribute_not_exists(#pk)', ExpressionAttributeNames: { '#pk': 'pk' } },
    );
    await this.watchIfAbsent(order.order_id, { status: opts.status, since: opts.now, spot: order.spot === true });
  }

  public async get(orderId: number): Promise<TrackedOrder | undefined> {
    const { Item } = await this.doc.send(
      new GetCommand({ TableName: this.tableName, Key: { pk: leaseKeys.lease(orderId) }, ConsistentRead: true }),
    );
    if (Item) this.reads += 1;
    return toTracked(Item);
  }

  public async cancelled(orderId: number, at: number): Promise<void> {
    // Only an order the relay tracks; a repeated cancel keeps the first moment.
    await updateItem(this.doc, this.tableName, leaseKeys.lease(orderId), {
      UpdateExpression: 'SET #at = if_not_exists(#at, :at)',
      ConditionExpression: 'attribute_exists(#pk)',
      ExpressionAttributeNames: { '#at': 'cancelled_at', '#pk': 'pk' },
      ExpressionAttributeValues: { ':at': at },
    });
  }

  public async getMany(orderIds: readonly number[]): Promise<ReadonlyMap<number, TrackedOrder>> {
    const items = await this.batchGet([...new Set(orderIds)].map((id) => leaseKeys.lease(id)));
    const byId = new Map<number, TrackedOrder>();
    for (const item of items.values()) {
      const tracked = toTracked(item);
      if (tracked) byId.set(tracked.order_id, tracked);
    }
    return byId;
  }

  public async extend(
    order: WatchedOrder,
    change: { expectedEnd: number | undefined; expiresAt: number; addHours: number },
    opts: { now: number; status: string },
  ): Promise<boolean> {
    await this.addDueEntry(order.order_id, change.expiresAt);
    const names: Record<string, string> = {
      '#order': 'order_id',
      '#task': 'task_id',
      '#expires': 'expires_at',
      '#hours': 'hours',
      '#ended': 'ended_at',
      '#claim': 'cancel_claimed_at',
      '#ttl': TTL_ATTRIBUTE,
    };
    const token = randomUUID();
    names['#token'] = CLAIM_TOKEN.extend;
    const values: Record<string, unknown> = {
      ':order': order.order_id,
      ':task': order.task_id,
      ':new': change.expiresAt,
      ':add': change.addHours,
      ':zero': 0,
      ':token': token,
    };
    const sets = [
      '#order = :order',
      '#task = if_not_exists(#task, :task)',
      '#expires = :new',
      '#hours = if_not_exists(#hours, :zero) + :add',
      '#token = :token',
    ];
    if (order.callback_url !== undefined) {
      names['#cb'] = 'callback_url';
      values[':cb'] = order.callback_url;
      sets.push('#cb = if_not_exists(#cb, :cb)');
    }
    if (order.spot !== undefined) {
      names['#spot'] = 'spot';
      values[':spot'] = order.spot;
      sets.push('#spot = if_not_exists(#spot, :spot)');
    }
    let condition = 'attribute_not_exists(#ended) AND attribute_not_exists(#claim) AND ';
    if (change.expectedEnd === undefined) {
      condition += 'attribute_not_exists(#expires)';
    } else {
      condition += '#expires = :old';
      values[':old'] = change.expectedEnd;
    }
    const pk = leaseKeys.lease(order.order_id);
    const moved = await updateItem(this.doc, this.tableName, pk, {
      UpdateExpression: `SET ${sets.join(', ')} REMOVE #ttl`,
      ConditionExpression: condition,
      ExpressionAttributeNames: names,
      ExpressionAttributeValues: values,
    });
    // Not moved: our own extension, landed on an attempt whose answer was lost? Then it must not be made
    // again. Otherwise the entry added above stays: the due query treats it as stale and prunes it.
    if (!moved && (await storedToken(this.doc, this.tableName, pk, CLAIM_TOKEN.extend)) !== token) return false;
    if (change.expectedEnd !== undefined && change.expectedEnd !== change.expiresAt)
      await this.removeDueEntry(order.order_id, change.expectedEnd);
    await this.watchIfAbsent(order.order_id, { status: opts.status, since: opts.now, spot: order.spot === true });
    return true;
  }

  public async claimSpotDecrease(orderId: number, now: number, windowSeconds: number): Promise<SpotDecreaseClaim> {
    for (let attempt = 0; attempt < 3; attempt += 1) {
      const { token, landed } = await putClaim(
        this.doc,
        this.tableName,
        { pk: leaseKeys.spotDecrease(orderId), decreased_at: now, [TTL_ATTRIBUTE]: now + windowSeconds + 3600 },
        CLAIM_TOKEN.spotDecrease,
        {
          ConditionExpression: 'attribute_not_exists(#pk) OR #at <= :cut',
          ExpressionAttributeNames: { '#pk': 'pk', '#at': 'decreased_at' },
          ExpressionAttributeValues: { ':cut': now - windowSeconds },
        },
      );
      if (landed) return { claimed: true };
      const { Item } = await this.doc.send(
        new GetCommand({
          TableName: this.tableName,
          Key: { pk: leaseKeys.spotDecrease(orderId) },
          ConsistentRead: true,
        }),
      );
      if (Item) this.reads += 1;
      // Our own claim, landed on an attempt whose answer was lost.
      if (Item?.[CLAIM_TOKEN.spotDecrease] === token) return { claimed: true };
      if (typeof Item?.decreased_at === 'number') return { claimed: false, last_at: Item.decreased_at };
      // Released between our two calls: try again.
    }
    return { claimed: false, last_at: now };
  }

  public async releaseSpotDecrease(orderId: number, at: number): Promise<void> {
    await deleteItem(this.doc, this.tableName, leaseKeys.spotDecrease(orderId), {
      ConditionExpression: '#at = :at',
      ExpressionAttributeNames: { '#at': 'decreased_at' },
      ExpressionAttributeValues: { ':at': at },
    });
  }

  // ---- internals ----------------------------------------------------------------------------

  /** Adds the due entry, then lowers the cursor to its bucket (or bumps the cursor's version). */
  private async addDueEntry(orderId: number, expiresAt: number): Promise<void> {
    const start = bucketStart(expiresAt);
    await this.doc.send(
      new UpdateCommand({
        TableName: this.tableName,
        Key: { pk: leaseKeys.due(start) },
        UpdateExpression: 'SET #entry = :exp, #bucket = :start',
        ExpressionAttributeNames: { '#entry': dueAttribute(orderId, expiresAt), '#bucket': 'bucket' },
        ExpressionAttributeValues: { ':exp': expiresAt, ':start': start },
      }),
    );
    const lowered = await updateCursor(
      this.doc,
      this.tableName,
      {
        UpdateExpression: 'SET #from = :start, #v = if_not_exists(#v, :zero) + :one',
        ConditionExpression: 'attribute_not_exists(#from) OR #from > :start',
      },
      { ':start': start, ':zero': 0, ':one': 1 },
    );
    if (!lowered) {
      // The cursor is already at or before our bucket; bumping the version stops a sweep that read it
      // before our entry existed from advancing past it.
      await this.doc.send(
        new UpdateCommand({
          TableName: this.tableName,
          Key: { pk: leaseKeys.cursor() },
          UpdateExpression: 'ADD #v :one',
          ExpressionAttributeNames: { '#v': 'v' },
          ExpressionAttributeValues: { ':one': 1 },
        }),
      );
    }
  }

  /** Removes a due entry (conditional on it: a missing bucket is never created). */
  protected async removeDueEntry(orderId: number, expiresAt: number): Promise<void> {
    await removeEntry(
      this.doc,
      this.tableName,
      leaseKeys.due(bucketStart(expiresAt)),
      dueAttribute(orderId, expiresAt),
      true,
    );
  }

  private async watchIfAbsent(orderId: number, entry: WatchEntry): Promise<void> {
    await this.doc.send(
      new UpdateCommand({
        TableName: this.tableName,
        Key: { pk: leaseKeys.watch() },
        UpdateExpression: 'SET #o = if_not_exists(#o, :entry)',
        ExpressionAttributeNames: { '#o': watchAttribute(orderId) },
        ExpressionAttributeValues: { ':entry': encodeWatch(entry) },
      }),
    );
  }

  /** Strongly consistent BatchGetItem over any number of keys, retrying unprocessed ones. Returns items by pk. */
  protected async batchGet(pks: readonly string[]): Promise<Map<string, Record<string, unknown>>> {
    const found = new Map<string, Record<string, unknown>>();
    for (let i = 0; i < pks.length; i += BATCH_GET_LIMIT) {
      let keys: Record<string, unknown>[] = pks.slice(i, i + BATCH_GET_LIMIT).map((pk) => ({ pk }));
      for (let attempt = 0; keys.length > 0; attempt += 1) {
        if (attempt > 0) {
          if (attempt > 8)
            throw new Error(`BatchGetItem left ${keys.length} keys unprocessed after ${attempt} attempts`);
          await wait(Math.min(1000, 25 * 2 ** attempt));
        }
        const out = await this.doc.send(
          new BatchGetCommand({ RequestItems: { [this.tableName]: { Keys: keys, ConsistentRead: true } } }),
        );
        for (const item of out.Responses?.[this.tableName] ?? []) {
          this.reads += 1;
          found.set(String(item.pk), item);
        }
        keys = out.UnprocessedKeys?.[this.tableName]?.Keys ?? [];
      }
    }
    return found;
  }
}
