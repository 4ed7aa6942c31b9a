/**
 * LeaseBook and LeaseStore in the relay table. The table has a partition key only (`pk`, no sort
 * key, no GSI), so the due index is built from whole items looked up by key:
 *
 * - `LEASE#<order_id>`: the order record (task_id, callback_url, spot) and its lease (expires_at,
 *   hours, warned_for, cancel_claimed_at, ended_at, end_reason). The source of truth.
 * - `LEASE_DUE#<yyyy-mm-ddThh:mm>`: one item per 15-minute bucket of lease ends; each lease ending in
 *   the bucket is one attribute `d<order_id>_<expires_at>` (value: expires_at). A sweep reads the
 *   buckets from the cursor up to the bucket of `before` by key (BatchGet), then only the lease items
 *   of the entries that are due: O(buckets in range + due), independent of how many leases exist.
 * - `LEASE_DUE#cursor`: the earliest bucket that may hold entries (`from`) and a version (`v`). Writers
 *   add their entry first, then lower the cursor (or bump `v`); a sweep advances it only if `v` did not
 *   move since it read it, so an entry written during a sweep is never skipped.
 * - `WATCH#orders`: one item, one attribute `o<order_id>` per watched order holding
 *   `[status, since, spot]` as JSON (about 35 bytes: ~11,000 watched orders fit the 400 KB item).
 *   The watch must compare every watched order with my_orders anyway; one item makes that one read.
 * - `LEASE_EVENT#<event id>`: an event claimed for sending (dedupe); `SPOT_DECREASE#<order_id>`: the
 *   relay's last spot price decrease on an order.
 *
 * Moving a lease (extend) adds the new due entry first, then moves the lease conditionally, then
 * removes the old entry: a crash in between leaves a stale entry, which the due query skips and
 * prunes, never a lease without an entry. Strongly consistent reads throughout: the cursor protocol
 * relies on reading what was just written.
 *
 * The key prefixes are declared in contract/resources.ts `keys`.
 *
 * Lost answers: a conditional write whose answer is lost (timeout, reset) after it landed is sent
 * again by the SDK and fails its own condition. Every claim therefore writes a random token beside
 * what it claims (`claim_id`, `warn_claim_id`, `cancel_claim_id`, `extend_id`, `status_write_id`),
 * and a failed condition is read back consistently: the call's own token means the write was its
 * own, and it answers as if the first answer had arrived. Another caller's write keeps the refusal.
 */
import { randomUUID } from 'node:crypto';
import {
  BatchGetCommand,
  DeleteCommand,
  GetCommand,
  PutCommand,
  UpdateCommand,
  type DynamoDBDocumentClient,
} from '@aws-sdk/lib-dynamodb';
import * as z from 'zod/mini';
import { isConditionalCheckFailed, storedAttributes } from './aws-clients';
import { keys, RELAY_TABLE } from '../../contract/resources';
import type { Lease, LeaseEnd, TrackedOrder, WatchedOrder, WatchEntry } from '../domain/lease';
import type { LeaseBook, LeaseStore, LeaseTerms, SpotDecreaseClaim } from '../domain/lease-ports';

const TTL_ATTRIBUTE = RELAY_TABLE.ttlAttribute;

/** Width of a due bucket. A sweep reads the buckets from the cursor to `before`, usually one or two. */
export const LEASE_DUE_BUCKET_SECONDS = 900;
/** How long an ended lease, an unwatched order or an event claim is kept. */
export const LEASE_RETENTION_SECONDS = 30 * 24 * 3600;
/**
 * An entry whose lease does not (yet) carry its end is left alone this long past `before`: it may
 * belong to a write in flight (Lambda runs at most 900 s). Older ones are garbage and are pruned.
 */
const IN_FLIGHT_GRACE_SECONDS = 3600;
/** BatchGetItem takes at most 100 keys. */
const BATCH_GET_LIMIT = 100;

/** The store's keys (contract/resources.ts `keys`), by their short names. */
export const leaseKeys = {
  lease: keys.lease,
  due: keys.leaseDue,
  cursor: keys.leaseDueCursor,
  watch: keys.watch,
  event: keys.leaseEvent,
  spotDecrease: keys.spotDecrease,
} as const;

export const bucketStart = (seconds: number): number => Math.floor(seconds / LEASE_DUE_BUCKET_SECONDS) * LEASE_DUE_BUCKET_SECONDS;
const dueAttribute = (orderId: number, expiresAt: number): string => `d${orderId}_${expiresAt}`;
const DUE_ATTRIBUTE = /^d(\d+)_(-?\d+)$/;
const watchAttribute = (orderId: number): string => `o${orderId}`;
const WATCH_ATTRIBUTE = /^o(\d+)$/;

const encodeWatch = (entry: WatchEntry): string => JSON.stringify([entry.status, entry.since, entry.spot ? 1 : 0]);
/**
 * Read by the sweep alone. Every call is marked pure so that a bundle with only DynamoDbLeaseBook drops
 * the schema, and zod's tuple with it (~1.9 KB): esbuild keeps an unmarked call, even to zod's own
 * side-effect-free functions.
 */
const WatchValueSchema = /* @__PURE__ */ z.tuple([
  /* @__PURE__ */ z.string(),
  /* @__PURE__ */ z.number(),
  /* @__PURE__ */ z.union([/* @__PURE__ */ z.literal(0), /* @__PURE__ */ z.literal(1)]),
]);

const LeaseItemSchema = z.object({
  order_id: z.int(),
  task_id: z.string(),
  callback_url: z.optional(z.string()),
  spot: z.optional(z.boolean()),
  key: z.optional(z.string()),
  on_outbid: z.optional(z.enum(['rebid', 'replace', 'rebid_then_replace'])),
  max_price: z.optional(z.number()),
  expires_at: z.optional(z.number()),
  hours: z.optional(z.number()),
  warned_for: z.optional(z.number()),
  cancel_claimed_at: z.optional(z.number()),
  end_reason: z.optional(z.enum(['cancelled', 'order_gone'])),
});

const toTracked = (item: Record<string, unknown> | undefined): TrackedOrder | undefined => {
  const parsed = LeaseItemSchema.safeParse(item);
  if (!parsed.success) return undefined;
  const i = parsed.data;
  const order: WatchedOrder = {
    order_id: i.order_id,
    task_id: i.task_id,
    ...(i.callback_url !== undefined ? { callback_url: i.callback_url } : {}),
    ...(i.spot !== undefined ? { spot: i.spot } : {}),
    ...(i.key !== undefined ? { key: i.key } : {}),
    ...(i.on_outbid !== undefined ? { on_outbid: i.on_outbid } : {}),
    ...(i.max_price !== undefined ? { max_price: i.max_price } : {}),
  };
  if (i.expires_at === undefined || i.hours === undefined) return order;
  const lease: Lease = {
    ...order,
    expires_at: i.expires_at,
    hours: i.hours,
    ...(i.warned_for !== undefined ? { warned_for: i.warned_for } : {}),
    ...(i.cancel_claimed_at !== undefined ? { cancel_claimed_at: i.cancel_claimed_at } : {}),
    ...(i.end_reason !== undefined ? { ended: i.end_reason } : {}),
  };
  return lease;
};


const ignoreLostCondition = (error: unknown): void => {
  if (!isConditionalCheckFailed(error)) throw error;
};

/** The token attributes of the claims (see the module comment). */
export const CLAIM_TOKEN = {
  event: 'claim_id',
  spotDecrease: 'claim_id',
  warning: 'warn_claim_id',
  cancel: 'cancel_claim_id',
  extend: 'extend_id',
  status: 'status_write_id',
} as const;

/** A token attribute's current value, read consistently (after a failed condition: was the write ours?). */
const storedToken = async (doc: DynamoDBDocumentClient, tableName: string, pk: string, attribute: string): Promise<unknown> =>
  (await storedAttributes(doc, tableName, pk, [attribute]))[attribute];

const wait = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

interface DueEntry {
  readonly orderId: number;
  readonly expiresAt: number;
  readonly bucket: number;
  readonly attribute: string;
}

/**
 * The lease book in the relay table: what the job worker and the workflow use. The sweep's methods
 * are in DynamoDbLeaseStore below, so a bundle that only constructs this class leaves them out
 * (esbuild cannot drop single methods of a class, only whole classes and module functions).
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
    try {
      await this.doc.send(new PutCommand({
        TableName: this.tableName,
        Item: {
          pk: leaseKeys.lease(order.order_id),
          order_id: order.order_id,
          task_id: order.task_id,
          ...(order.callback_url !== undefined ? { callback_url: order.callback_url } : {}),
          ...(order.spot !== undefined ? { spot: order.spot } : {}),
          ...(order.key !== undefined ? { key: order.key } : {}),
          ...(order.on_outbid !== undefined ? { on_outbid: order.on_outbid } : {}),
          ...(order.max_price !== undefined ? { max_price: order.max_price } : {}),
          ...(opts.lease ? { expires_at: opts.lease.expires_at, hours: opts.lease.hours } : {}),
        },
        // A retried readiness step must not reset warnings, claims or an extension made since.
        ConditionExpression: 'attribute_not_exists(#pk)',
        ExpressionAttributeNames: { '#pk': 'pk' },
      }));
    } catch (error) {
      ignoreLostCondition(error);
    }
    await this.watchIfAbsent(order.order_id, { status: opts.status, since: opts.now, spot: order.spot === true });
  }

  public async get(orderId: number): Promise<TrackedOrder | undefined> {
    const { Item } = await this.doc.send(new GetCommand({ TableName: this.tableName, Key: { pk: leaseKeys.lease(orderId) }, ConsistentRead: true }));
    if (Item) this.reads += 1;
    return toTracked(Item);
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
      '#order': 'order_id', '#task': 'task_id', '#expires': 'expires_at', '#hours': 'hours',
      '#ended': 'ended_at', '#claim': 'cancel_claimed_at', '#ttl': TTL_ATTRIBUTE,
    };
    const token = randomUUID();
    names['#token'] = CLAIM_TOKEN.extend;
    const values: Record<string, unknown> = { ':order': order.order_id, ':task': order.task_id, ':new': change.expiresAt, ':add': change.addHours, ':zero': 0, ':token': token };
    const sets = ['#order = :order', '#task = if_not_exists(#task, :task)', '#expires = :new', '#hours = if_not_exists(#hours, :zero) + :add', '#token = :token'];
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
    try {
      await this.doc.send(new UpdateCommand({
        TableName: this.tableName,
        Key: { pk: leaseKeys.lease(order.order_id) },
        UpdateExpression: `SET ${sets.join(', ')} REMOVE #ttl`,
        ConditionExpression: condition,
        ExpressionAttributeNames: names,
        ExpressionAttributeValues: values,
      }));
    } catch (error) {
      if (!isConditionalCheckFailed(error)) throw error;
      // Our own extension, landed on an attempt whose answer was lost? Then it must not be made again.
      // Otherwise the entry added above stays: the due query treats it as stale and prunes it.
      if ((await storedToken(this.doc, this.tableName, leaseKeys.lease(order.order_id), CLAIM_TOKEN.extend)) !== token) return false;
    }
    if (change.expectedEnd !== undefined && change.expectedEnd !== change.expiresAt) await this.removeDueEntry(order.order_id, change.expectedEnd);
    await this.watchIfAbsent(order.order_id, { status: opts.status, since: opts.now, spot: order.spot === true });
    return true;
  }

  public async claimSpotDecrease(orderId: number, now: number, windowSeconds: number): Promise<SpotDecreaseClaim> {
    for (let attempt = 0; attempt < 3; attempt += 1) {
      const token = randomUUID();
      try {
        await this.doc.send(new PutCommand({
          TableName: this.tableName,
          Item: { pk: leaseKeys.spotDecrease(orderId), decreased_at: now, [CLAIM_TOKEN.spotDecrease]: token, [TTL_ATTRIBUTE]: now + windowSeconds + 3600 },
          ConditionExpression: 'attribute_not_exists(#pk) OR #at <= :cut',
          ExpressionAttributeNames: { '#pk': 'pk', '#at': 'decreased_at' },
          ExpressionAttributeValues: { ':cut': now - windowSeconds },
        }));
        return { claimed: true };
      } catch (error) {
        ignoreLostCondition(error);
      }
      const { Item } = await this.doc.send(new GetCommand({ TableName: this.tableName, Key: { pk: leaseKeys.spotDecrease(orderId) }, ConsistentRead: true }));
      if (Item) this.reads += 1;
      // Our own claim, landed on an attempt whose answer was lost.
      if (Item?.[CLAIM_TOKEN.spotDecrease] === token) return { claimed: true };
      if (typeof Item?.decreased_at === 'number') return { claimed: false, last_at: Item.decreased_at };
      // Released between our two calls: try again.
    }
    return { claimed: false, last_at: now };
  }

  public async releaseSpotDecrease(orderId: number, at: number): Promise<void> {
    try {
      await this.doc.send(new DeleteCommand({
        TableName: this.tableName,
        Key: { pk: leaseKeys.spotDecrease(orderId) },
        ConditionExpression: '#at = :at',
        ExpressionAttributeNames: { '#at': 'decreased_at' },
        ExpressionAttributeValues: { ':at': at },
      }));
    } catch (error) {
      ignoreLostCondition(error);
    }
  }

  // ---- internals ----------------------------------------------------------------------------

  /** Adds the due entry, then lowers the cursor to its bucket (or bumps the cursor's version). */
  private async addDueEntry(orderId: number, expiresAt: number): Promise<void> {
    const start = bucketStart(expiresAt);
    await this.doc.send(new UpdateCommand({
      TableName: this.tableName,
      Key: { pk: leaseKeys.due(start) },
      UpdateExpression: 'SET #entry = :exp, #bucket = :start',
      ExpressionAttributeNames: { '#entry': dueAttribute(orderId, expiresAt), '#bucket': 'bucket' },
      ExpressionAttributeValues: { ':exp': expiresAt, ':start': start },
    }));
    try {
      await this.doc.send(new UpdateCommand({
        TableName: this.tableName,
        Key: { pk: leaseKeys.cursor() },
        UpdateExpression: 'SET #from = :start, #v = if_not_exists(#v, :zero) + :one',
        ConditionExpression: 'attribute_not_exists(#from) OR #from > :start',
        ExpressionAttributeNames: { '#from': 'from', '#v': 'v' },
        ExpressionAttributeValues: { ':start': start, ':zero': 0, ':one': 1 },
      }));
    } catch (error) {
      ignoreLostCondition(error);
      // The cursor is already at or before our bucket; bumping the version stops a sweep that read it
      // before our entry existed from advancing past it.
      await this.doc.send(new UpdateCommand({
        TableName: this.tableName,
        Key: { pk: leaseKeys.cursor() },
        UpdateExpression: 'ADD #v :one',
        ExpressionAttributeNames: { '#v': 'v' },
        ExpressionAttributeValues: { ':one': 1 },
      }));
    }
  }

  protected async removeDueEntry(orderId: number, expiresAt: number): Promise<void> {
    await this.removeAttribute(leaseKeys.due(bucketStart(expiresAt)), dueAttribute(orderId, expiresAt));
  }

  /** REMOVE of one attribute, without creating the item when it is missing. */
  protected async removeAttribute(pk: string, attribute: string): Promise<void> {
    try {
      await this.doc.send(new UpdateCommand({
        TableName: this.tableName,
        Key: { pk },
        UpdateExpression: 'REMOVE #a',
        ConditionExpression: 'attribute_exists(#a)',
        ExpressionAttributeNames: { '#a': attribute },
      }));
    } catch (error) {
      ignoreLostCondition(error);
    }
  }

  private async watchIfAbsent(orderId: number, entry: WatchEntry): Promise<void> {
    await this.doc.send(new UpdateCommand({
      TableName: this.tableName,
      Key: { pk: leaseKeys.watch() },
      UpdateExpression: 'SET #o = if_not_exists(#o, :entry)',
      ExpressionAttributeNames: { '#o': watchAttribute(orderId) },
      ExpressionAttributeValues: { ':entry': encodeWatch(entry) },
    }));
  }

  /** Strongly consistent BatchGetItem over any number of keys, retrying unprocessed ones. Returns items by pk. */
  protected async batchGet(pks: readonly string[]): Promise<Map<string, Record<string, unknown>>> {
    const found = new Map<string, Record<string, unknown>>();
    for (let i = 0; i < pks.length; i += BATCH_GET_LIMIT) {
      let keys: Record<string, unknown>[] = pks.slice(i, i + BATCH_GET_LIMIT).map((pk) => ({ pk }));
      for (let attempt = 0; keys.length > 0; attempt += 1) {
        if (attempt > 0) {
          if (attempt > 8) throw new Error(`BatchGetItem left ${keys.length} keys unprocessed after ${attempt} attempts`);
          await wait(Math.min(1000, 25 * 2 ** attempt));
        }
        const out = await this.doc.send(new BatchGetCommand({ RequestItems: { [this.tableName]: { Keys: keys, ConsistentRead: true } } }));
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

/**
 * A conditional update of `LEASE#<orderId>`: true when it was applied. Used by the sweep alone, so a
 * module function rather than a member of the book: a bundle with the book alone drops it.
 * With `tokenAttribute` (a claim), the update also sets that attribute to a fresh random value, and a
 * failed condition still answers true when the item holds it: the call's own write, retried by the SDK.
 */
const conditionalUpdate = async (
  doc: DynamoDBDocumentClient,
  tableName: string,
  orderId: number,
  update: { UpdateExpression: string; ConditionExpression: string; ExpressionAttributeNames: Record<string, string>; ExpressionAttributeValues: Record<string, unknown> },
  tokenAttribute?: string,
): Promise<boolean> => {
  const value = tokenAttribute === undefined ? undefined : randomUUID();
  const request = tokenAttribute === undefined
    ? update
    : {
        ...update,
        UpdateExpression: `${update.UpdateExpression}, #token = :token`,
        ExpressionAttributeNames: { ...update.ExpressionAttributeNames, '#token': tokenAttribute },
        ExpressionAttributeValues: { ...update.ExpressionAttributeValues, ':token': value },
      };
  try {
    await doc.send(new UpdateCommand({ TableName: tableName, Key: { pk: leaseKeys.lease(orderId) }, ...request }));
    return true;
  } catch (error) {
    if (!isConditionalCheckFailed(error)) throw error;
    return tokenAttribute !== undefined && (await storedToken(doc, tableName, leaseKeys.lease(orderId), tokenAttribute)) === value;
  }
};

/** Leases, watch list and event claims in the relay table: the lease book plus the fleet watch's sweep. */
export class DynamoDbLeaseStore extends DynamoDbLeaseBook implements LeaseStore {
  public async dueBefore(before: number, limit: number): Promise<readonly Lease[]> {
    const { Item: cursor } = await this.doc.send(new GetCommand({ TableName: this.tableName, Key: { pk: leaseKeys.cursor() }, ConsistentRead: true }));
    if (!cursor || typeof cursor.from !== 'number') return []; // no lease was ever tracked
    this.reads += 1;
    const from = cursor.from;
    const version = typeof cursor.v === 'number' ? cursor.v : 0;
    const last = bucketStart(before);
    if (from > last) return [];

    const starts: number[] = [];
    for (let start = from; start <= last; start += LEASE_DUE_BUCKET_SECONDS) starts.push(start);
    const buckets = await this.batchGet(starts.map((s) => leaseKeys.due(s)));
    const entries: DueEntry[] = [];
    for (const start of starts) {
      const item = buckets.get(leaseKeys.due(start));
      for (const attribute of Object.keys(item ?? {})) {
        const match = DUE_ATTRIBUTE.exec(attribute);
        if (match) entries.push({ orderId: Number(match[1]), expiresAt: Number(match[2]), bucket: start, attribute });
      }
    }

    const candidates = entries
      .filter((e) => e.expiresAt <= before)
      .sort((a, b) => a.expiresAt - b.expiresAt || a.orderId - b.orderId);
    const due: Lease[] = [];
    const seen = new Set<number>();
    const pruned = new Set<string>();
    for (let i = 0; i < candidates.length && due.length < limit; i += BATCH_GET_LIMIT) {
      const chunk = candidates.slice(i, i + BATCH_GET_LIMIT);
      const records = await this.getMany(chunk.map((e) => e.orderId));
      for (const entry of chunk) {
        const record = records.get(entry.orderId);
        const lease = record && 'expires_at' in record ? record : undefined;
        if (lease && !lease.ended && lease.expires_at === entry.expiresAt) {
          if (due.length < limit && !seen.has(entry.orderId)) {
            seen.add(entry.orderId);
            due.push(lease);
          }
          continue;
        }
        // Ends only grow, so an entry behind its lease's end, or of an ended lease, can never be due
        // again; an entry ahead of it (or without a record) may belong to a write in flight.
        const stale = lease !== undefined && (lease.ended !== undefined || entry.expiresAt < lease.expires_at);
        if (stale || entry.expiresAt <= before - IN_FLIGHT_GRACE_SECONDS) {
          pruned.add(`${entry.bucket}/${entry.attribute}`);
          await this.removeAttribute(leaseKeys.due(entry.bucket), entry.attribute);
        }
      }
    }

    const firstHeld = starts.find((start) => entries.some((e) => e.bucket === start && !pruned.has(`${e.bucket}/${e.attribute}`)));
    const next = firstHeld ?? last;
    if (next > from) {
      try {
        await this.doc.send(new UpdateCommand({
          TableName: this.tableName,
          Key: { pk: leaseKeys.cursor() },
          UpdateExpression: 'SET #from = :next',
          // Only if no writer touched the cursor since we read it: its entry may be in a bucket we passed.
          ConditionExpression: '#v = :v AND #from = :from',
          ExpressionAttributeNames: { '#from': 'from', '#v': 'v' },
          ExpressionAttributeValues: { ':next': next, ':v': version, ':from': from },
        }));
      } catch (error) {
        ignoreLostCondition(error);
      }
    }
    return due;
  }

  public async claimWarning(orderId: number, expiresAt: number): Promise<boolean> {
    return conditionalUpdate(this.doc, this.tableName, orderId, {
      UpdateExpression: 'SET #warned = :exp',
      ConditionExpression: '#expires = :exp AND attribute_not_exists(#ended) AND (attribute_not_exists(#warned) OR #warned <> :exp)',
      ExpressionAttributeNames: { '#warned': 'warned_for', '#expires': 'expires_at', '#ended': 'ended_at' },
      ExpressionAttributeValues: { ':exp': expiresAt },
    }, CLAIM_TOKEN.warning);
  }

  public async claimCancel(orderId: number, expiresAt: number, now: number, staleAfterSeconds: number): Promise<boolean> {
    return conditionalUpdate(this.doc, this.tableName, orderId, {
      UpdateExpression: 'SET #claim = :now',
      ConditionExpression: '#expires = :exp AND attribute_not_exists(#ended) AND (attribute_not_exists(#claim) OR #claim <= :stale)',
      ExpressionAttributeNames: { '#claim': 'cancel_claimed_at', '#expires': 'expires_at', '#ended': 'ended_at' },
      ExpressionAttributeValues: { ':now': now, ':exp': expiresAt, ':stale': now - staleAfterSeconds },
    }, CLAIM_TOKEN.cancel);
  }

  public async releaseCancel(orderId: number, claimedAt: number): Promise<void> {
    await conditionalUpdate(this.doc, this.tableName, orderId, {
      UpdateExpression: 'REMOVE #claim',
      ConditionExpression: '#claim = :at AND attribute_not_exists(#ended)',
      ExpressionAttributeNames: { '#claim': 'cancel_claimed_at', '#ended': 'ended_at' },
      ExpressionAttributeValues: { ':at': claimedAt },
    });
  }

  public async endLease(orderId: number, reason: LeaseEnd, now: number, expiresAt?: number): Promise<boolean> {
    const values: Record<string, unknown> = { ':now': now, ':reason': reason, ':ttl': now + LEASE_RETENTION_SECONDS };
    let condition = 'attribute_exists(#expires) AND attribute_not_exists(#ended)';
    if (expiresAt !== undefined) {
      condition += ' AND #expires = :exp';
      values[':exp'] = expiresAt;
    }
    let ended: Record<string, unknown> | undefined;
    try {
      ({ Attributes: ended } = await this.doc.send(new UpdateCommand({
        TableName: this.tableName,
        Key: { pk: leaseKeys.lease(orderId) },
        UpdateExpression: 'SET #ended = :now, #reason = :reason, #ttl = :ttl REMOVE #claim',
        ConditionExpression: condition,
        ExpressionAttributeNames: { '#expires': 'expires_at', '#ended': 'ended_at', '#reason': 'end_reason', '#ttl': TTL_ATTRIBUTE, '#claim': 'cancel_claimed_at' },
        ExpressionAttributeValues: values,
        ReturnValues: 'ALL_NEW',
      })));
    } catch (error) {
      if (isConditionalCheckFailed(error)) return false;
      throw error;
    }
    if (typeof ended?.expires_at === 'number') await this.removeDueEntry(orderId, ended.expires_at);
    return true;
  }

  public async watched(): Promise<ReadonlyMap<number, WatchEntry>> {
    const { Item } = await this.doc.send(new GetCommand({ TableName: this.tableName, Key: { pk: leaseKeys.watch() }, ConsistentRead: true }));
    const entries = new Map<number, WatchEntry>();
    if (!Item) return entries;
    this.reads += 1;
    for (const [attribute, value] of Object.entries(Item)) {
      const match = WATCH_ATTRIBUTE.exec(attribute);
      if (!match || typeof value !== 'string') continue;
      let decoded: unknown;
      try {
        decoded = JSON.parse(value);
      } catch {
        continue;
      }
      const parsed = WatchValueSchema.safeParse(decoded);
      if (parsed.success) entries.set(Number(match[1]), { status: parsed.data[0], since: parsed.data[1], spot: parsed.data[2] === 1 });
    }
    return entries;
  }

  public async setStatus(orderId: number, prev: WatchEntry, next: WatchEntry | undefined, now: number): Promise<boolean> {
    // The token is one attribute for the whole watch item (not one per order: the item's size is the
    // watch's capacity). A concurrent setStatus on another order may replace it between our landed
    // write and the SDK's retry; we then answer false, as before (a missed report, never a double one).
    const token = randomUUID();
    const values: Record<string, unknown> = { ':prev': encodeWatch(prev), ':token': token };
    if (next) values[':next'] = encodeWatch(next);
    try {
      await this.doc.send(new UpdateCommand({
        TableName: this.tableName,
        Key: { pk: leaseKeys.watch() },
        UpdateExpression: next ? 'SET #o = :next, #token = :token' : 'SET #token = :token REMOVE #o',
        ConditionExpression: '#o = :prev',
        ExpressionAttributeNames: { '#o': watchAttribute(orderId), '#token': CLAIM_TOKEN.status },
        ExpressionAttributeValues: values,
      }));
    } catch (error) {
      if (!isConditionalCheckFailed(error)) throw error;
      if ((await storedToken(this.doc, this.tableName, leaseKeys.watch(), CLAIM_TOKEN.status)) !== token) return false;
    }
    if (!next) {
      // An order without a lease is kept for a while after the watch lets it go (endLease does it for leases).
      await conditionalUpdate(this.doc, this.tableName, orderId, {
        UpdateExpression: 'SET #ttl = :ttl',
        ConditionExpression: 'attribute_exists(#pk) AND attribute_not_exists(#expires)',
        ExpressionAttributeNames: { '#ttl': TTL_ATTRIBUTE, '#pk': 'pk', '#expires': 'expires_at' },
        ExpressionAttributeValues: { ':ttl': now + LEASE_RETENTION_SECONDS },
      });
    }
    return true;
  }

  public async claimEvent(eventId: string, now: number): Promise<boolean> {
    const token = randomUUID();
    try {
      await this.doc.send(new PutCommand({
        TableName: this.tableName,
        Item: { pk: leaseKeys.event(eventId), claimed_at: now, [CLAIM_TOKEN.event]: token, [TTL_ATTRIBUTE]: now + LEASE_RETENTION_SECONDS },
        ConditionExpression: 'attribute_not_exists(#pk)',
        ExpressionAttributeNames: { '#pk': 'pk' },
      }));
      return true;
    } catch (error) {
      if (!isConditionalCheckFailed(error)) throw error;
      return (await storedToken(this.doc, this.tableName, leaseKeys.event(eventId), CLAIM_TOKEN.event)) === token;
    }
  }
}
