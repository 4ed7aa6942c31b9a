/**
 * LeaseStore in the relay table: the lease book (dynamodb-lease-book.ts) plus the fleet watch's sweep:
 * the due query, the warning and cancel claims, the watch list and the event claims. The items and the
 * cursor protocol are described in dynamodb-lease-items.ts.
 */
import { randomUUID } from 'node:crypto';
import { GetCommand, type DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import * as z from 'zod/mini';
import type { Lease, LeaseEnd, WatchEntry } from '../../domain/leases/lease';
import type { LeaseStore } from '../../domain/leases/lease-ports';
import { DynamoDbLeaseBook } from './dynamodb-lease-book';
import {
  BATCH_GET_LIMIT,
  bucketStart,
  CLAIM_TOKEN,
  encodeWatch,
  LEASE_DUE_BUCKET_SECONDS,
  LEASE_RETENTION_SECONDS,
  leaseKeys,
  putClaim,
  storedToken,
  TTL_ATTRIBUTE,
  updateCursor,
  watchAttribute,
} from './dynamodb-lease-items';
import { removeEntry } from './dynamodb-entry-attributes';
import { updateItem } from './dynamodb-item-writes';

/**
 * An entry whose lease does not (yet) carry its end is left alone this long past `before`: it may
 * belong to a write in flight (Lambda runs at most 900 s). Older ones are garbage and are pruned.
 */
const IN_FLIGHT_GRACE_SECONDS = 3600;
const DUE_ATTRIBUTE = /^d(\d+)_(-?\d+)$/;
const WATCH_ATTRIBUTE = /^o(\d+)$/;

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

interface DueEntry {
  readonly orderId: number;
  readonly expiresAt: number;
  readonly bucket: number;
  readonly attribute: string;
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
  update: {
    UpdateExpression: string;
    ConditionExpression: string;
    ExpressionAttributeNames: Record<string, string>;
    ExpressionAttributeValues: Record<string, unknown>;
  },
  tokenAttribute?: string,
): Promise<boolean> => {
  const value = tokenAttribute === undefined ? undefined : randomUUID();
  const request =
    tokenAttribute === undefined
      ? update
      : {
          ...update,
          UpdateExpression: `${update.UpdateExpression}, #token = :token`,
          ExpressionAttributeNames: { ...update.ExpressionAttributeNames, '#token': tokenAttribute },
          ExpressionAttributeValues: { ...update.ExpressionAttributeValues, ':token': value },
        };
  if (await updateItem(doc, tableName, leaseKeys.lease(orderId), request)) return true;
  return (
    tokenAttribute !== undefined &&
    (await storedToken(doc, tableName, leaseKeys.lease(orderId), tokenAttribute)) === value
  );
};

/** Leases, watch list and event claims in the relay table: the lease book plus the fleet watch's sweep. */
export class DynamoDbLeaseStore extends DynamoDbLeaseBook implements LeaseStore {
  public async dueBefore(before: number, limit: number): Promise<readonly Lease[]> {
    const { Item: cursor } = await this.doc.send(
      new GetCommand({ TableName: this.tableName, Key: { pk: leaseKeys.cursor() }, ConsistentRead: true }),
    );
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
          await removeEntry(this.doc, this.tableName, leaseKeys.due(entry.bucket), entry.attribute, true);
        }
      }
    }

    const firstHeld = starts.find((start) =>
      entries.some((e) => e.bucket === start && !pruned.has(`${e.bucket}/${e.attribute}`)),
    );
    const next = firstHeld ?? last;
    if (next > from) {
      await updateCursor(
        this.doc,
        this.tableName,
        // Only if no writer touched the cursor since we read it: its entry may be in a bucket we passed.
        { UpdateExpression: 'SET #from = :next', ConditionExpression: '#v = :v AND #from = :from' },
        { ':next': next, ':v': version, ':from': from },
      );
    }
    return due;
  }

  public async claimWarning(orderId: number, expiresAt: number): Promise<boolean> {
    return conditionalUpdate(
      this.doc,
      this.tableName,
      orderId,
      {
        UpdateExpression: 'SET #warned = :exp',
        ConditionExpression:
          '#expires = :exp AND attribute_not_exists(#ended) AND (attribute_not_exists(#warned) OR #warned <> :exp)',
        ExpressionAttributeNames: { '#warned': 'warned_for', '#expires': 'expires_at', '#ended': 'ended_at' },
        ExpressionAttributeValues: { ':exp': expiresAt },
      },
      CLAIM_TOKEN.warning,
    );
  }

  public async claimCancel(
    orderId: number,
    expiresAt: number,
    now: number,
    staleAfterSeconds: number,
  ): Promise<boolean> {
    return conditionalUpdate(
      this.doc,
      this.tableName,
      orderId,
      {
        UpdateExpression: 'SET #claim = :now',
        ConditionExpression:
          '#expires = :exp AND attribute_not_exists(#ended) AND (attribute_not_exists(#claim) OR #claim <= :stale)',
        ExpressionAttributeNames: { '#claim': 'cancel_claimed_at', '#expires': 'expires_at', '#ended': 'ended_at' },
        ExpressionAttributeValues: { ':now': now, ':exp': expiresAt, ':stale': now - staleAfterSeconds },
      },
      CLAIM_TOKEN.cancel,
    );
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
    const answer = await updateItem(this.doc, this.tableName, leaseKeys.lease(orderId), {
      UpdateExpression: 'SET #ended = :now, #reason = :reason, #ttl = :ttl REMOVE #claim',
      ConditionExpression: condition,
      ExpressionAttributeNames: {
        '#expires': 'expires_at',
        '#ended': 'ended_at',
        '#reason': 'end_reason',
        '#ttl': TTL_ATTRIBUTE,
        '#claim': 'cancel_claimed_at',
      },
      ExpressionAttributeValues: values,
      ReturnValues: 'ALL_NEW',
    });
    if (!answer) return false;
    const ended = answer.Attributes;
    if (typeof ended?.expires_at === 'number') await this.removeDueEntry(orderId, ended.expires_at);
    return true;
  }

  public async watched(): Promise<ReadonlyMap<number, WatchEntry>> {
    const { Item } = await this.doc.send(
      new GetCommand({ TableName: this.tableName, Key: { pk: leaseKeys.watch() }, ConsistentRead: true }),
    );
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
      if (parsed.success)
        entries.set(Number(match[1]), { status: parsed.data[0], since: parsed.data[1], spot: parsed.data[2] === 1 });
    }
    return entries;
  }

  public async setStatus(
    orderId: number,
    prev: WatchEntry,
    next: WatchEntry | undefined,
    now: number,
  ): Promise<boolean> {
    // The token is one attribute for the whole watch item (not one per order: the item's size is the
    // watch's capacity). A concurrent setStatus on another order may replace it between our landed
    // write and the SDK's retry; we then answer false, as before (a missed report, never a double one).
    const token = randomUUID();
    const values: Record<string, unknown> = { ':prev': encodeWatch(prev), ':token': token };
    if (next) values[':next'] = encodeWatch(next);
    const written = await updateItem(this.doc, this.tableName, leaseKeys.watch(), {
      UpdateExpression: next ? 'SET #o = :next, #token = :token' : 'SET #token = :token REMOVE #o',
      ConditionExpression: '#o = :prev',
      ExpressionAttributeNames: { '#o': watchAttribute(orderId), '#token': CLAIM_TOKEN.status },
      ExpressionAttributeValues: values,
    });
    if (!written && (await storedToken(this.doc, this.tableName, leaseKeys.watch(), CLAIM_TOKEN.status)) !== token)
      return false;
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
    const pk = leaseKeys.event(eventId);
    const { token, landed } = await putClaim(
      this.doc,
      this.tableName,
      { pk, claimed_at: now, [TTL_ATTRIBUTE]: now + LEASE_RETENTION_SECONDS },
      CLAIM_TOKEN.event,
      { ConditionExpression: 'attribute_not_exists(#pk)', ExpressionAttributeNames: { '#pk': 'pk' } },
    );
    return landed || (await storedToken(this.doc, this.tableName, pk, CLAIM_TOKEN.event)) === token;
  }
}
