/**
 * SlidingWindow over one DynamoDB item per key: the events, their ids (a string set) and a
 * `version`.
 *
 * Fast path: one atomic UpdateItem appends the event on condition that the stored list holds fewer
 * than `limit` events and not this id. Stored events may include expired ones, so "fewer than limit
 * stored" implies "fewer than limit in the window": an accepted append is always exact, and
 * concurrent callers never conflict (a burst of 10 requests from one address costs 10 writes, not
 * 10 rounds of read-modify-write races).
 * Slow path (the list is full or the id is known): read, prune expired events with the pure window
 * math, decide exactly, and write back only if the version is unchanged.
 */
import { GetCommand, type DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import * as z from 'zod/mini';
import { ConcurrentUpdateError } from '../../domain/errors';
import type { SlidingWindow } from '../../domain/ports';
import { slideWindow } from '../../domain/sliding-window';
import { putItem, updateItem } from './dynamodb-item-writes';

const WindowItemSchema = z.object({
  events: z._default(z.array(z.object({ id: z.string(), t: z.number() })), []),
  version: z._default(z.int().check(z.nonnegative()), 0),
});

/** Optimistic-concurrency attempts before giving up with a (transient) ConcurrentUpdateError. */
const MAX_ATTEMPTS = 50;

const jitter = (attempt: number): Promise<void> =>
  // Full jitter over a doubling cap (2, 4, 8 … 64 ms): racing writers spread out instead of
  // colliding again in lock-step, which a fixed tiny jitter did under 10 concurrent writers.
  new Promise((resolve) => setTimeout(resolve, Math.floor(Math.random() * Math.min(2 ** attempt, 64))));

/** Exact rolling windows in a DynamoDB table; `key` is the item's pk (keys.rate(ip), keys.quota()). */
export class DynamoDbSlidingWindow implements SlidingWindow {
  public constructor(
    private readonly doc: DynamoDBDocumentClient,
    private readonly tableName: string,
  ) {}

  public async hit(
    key: string,
    opts: { now: number; windowMs: number; limit: number; eventId: string },
  ): Promise<{ allowed: boolean; retryAfterMs: number; count: number }> {
    const fast = await this.append(key, opts);
    if (fast) return fast;
    for (let attempt = 1; attempt <= MAX_ATTEMPTS; attempt += 1) {
      const { Item } = await this.doc.send(
        new GetCommand({ TableName: this.tableName, Key: { pk: key }, ConsistentRead: true }),
      );
      const parsed = WindowItemSchema.safeParse(Item ?? {});
      // A malformed item is overwritten rather than blocking the key forever; its version still guards the write.
      const stored = parsed.success
        ? parsed.data
        : { events: [], version: typeof Item?.version === 'number' ? Item.version : 0 };
      const expected = Item ? stored.version : 0;
      const outcome = slideWindow({ ...opts, events: stored.events });
      const result = { allowed: outcome.allowed, retryAfterMs: outcome.retryAfterMs, count: outcome.count };
      // A rejection or a repeated event id changes nothing worth a write (pruning can wait for the next hit).
      if (!outcome.allowed || !outcome.changed) return result;
      const newest = outcome.events.reduce((max, e) => Math.max(max, e.t), opts.now);
      const written = await putItem(
        this.doc,
        this.tableName,
        {
          pk: key,
          events: outcome.events,
          ...(outcome.events.length > 0 ? { ids: new Set(outcome.events.map((e) => e.id)) } : {}),
          version: expected + 1,
          // Gone once its newest event has left the window; DynamoDB TTL deletes it (eventually).
          ttl: Math.ceil((newest + opts.windowMs) / 1000) + 60,
        },
        {
          ConditionExpression: 'attribute_not_exists(#pk) OR #version = :v',
          ExpressionAttributeNames: { '#pk': 'pk', '#version': 'version' },
          ExpressionAttributeValues: { ':v': expected },
        },
      );
      if (written) return result;
      await jitter(attempt);
    }
    throw new ConcurrentUpdateError(`sliding window ${key.split('#')[0]} is too contended`);
  }

  /** The conflict-free append; undefined when the slow path must decide. */
  private async append(
    key: string,
    opts: { now: number; windowMs: number; limit: number; eventId: string },
  ): Promise<{ allowed: boolean; retryAfterMs: number; count: number } | undefined> {
    if (opts.limit <= 0) return undefined;
    const appended = await updateItem(this.doc, this.tableName, key, {
      UpdateExpression:
        'SET #events = list_append(if_not_exists(#events, :empty), :new), #ttl = :ttl ADD #version :one, #ids :idset',
      ConditionExpression:
        '(attribute_not_exists(#events) OR size(#events) < :limit) AND (attribute_not_exists(#ids) OR NOT contains(#ids, :id))',
      ExpressionAttributeNames: { '#events': 'events', '#ids': 'ids', '#version': 'version', '#ttl': 'ttl' },
      ExpressionAttributeValues: {
        ':empty': [],
        ':new': [{ id: opts.eventId, t: opts.now }],
        ':ttl': Math.ceil((opts.now + opts.windowMs) / 1000) + 60,
        ':one': 1,
        ':idset': new Set([opts.eventId]),
        ':limit': opts.limit,
        ':id': opts.eventId,
      },
      ReturnValues: 'UPDATED_NEW',
    });
    if (!appended) return undefined;
    const events = WindowItemSchema.shape.events.safeParse(appended.Attributes?.events);
    const count = events.success ? events.data.filter((e) => e.t > opts.now - opts.windowMs).length : 1;
    return { allowed: true, retryAfterMs: 0, count };
  }
}
