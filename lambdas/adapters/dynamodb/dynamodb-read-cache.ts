/**
 * Shared marketplace reads in DynamoDB: one small item per cached answer (pk = CACHE#<name>),
 * holding the answer as a JSON string and the time its read started.
 */
import { GetCommand, PutCommand, type DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import type { ReadCache } from '../../marketplace/read-cache';
import { keys, RELAY_TABLE } from '../../../contract/resources';
import { putItem } from './dynamodb-item-writes';

/** DynamoDB items are limited to 400 KB; larger answers are simply not cached. */
export const MAX_CACHED_BYTES = 350_000;

export class DynamoDbReadCache implements ReadCache {
  public constructor(
    private readonly doc: DynamoDBDocumentClient,
    private readonly tableName: string,
  ) {}

  public async get(name: string, maxAgeMs: number, now: number): Promise<unknown | undefined> {
    // Consistent: right after an invalidation the next poll must not get the old list back.
    const { Item } = await this.doc.send(
      new GetCommand({ TableName: this.tableName, Key: { pk: keys.cache(name) }, ConsistentRead: true }),
    );
    if (!Item || typeof Item.value !== 'string' || typeof Item.read_at !== 'number') return undefined;
    if (now - Item.read_at > maxAgeMs) return undefined;
    try {
      return JSON.parse(Item.value) as unknown;
    } catch {
      return undefined;
    }
  }

  public async put(name: string, value: unknown, now: number, ttlSeconds: number): Promise<void> {
    const json = JSON.stringify(value);
    if (Buffer.byteLength(json, 'utf8') > MAX_CACHED_BYTES) return;
    await putItem(
      this.doc,
      this.tableName,
      {
        pk: keys.cache(name),
        value: json,
        read_at: now,
        [RELAY_TABLE.ttlAttribute]: Math.ceil(now / 1000) + ttlSeconds,
      },
      {
        // Never replace a fresher answer, nor an invalidation made at or after this read began.
        ConditionExpression:
          'attribute_not_exists(pk) OR (attribute_exists(#value) AND read_at <= :at) OR (attribute_not_exists(#value) AND read_at < :at)',
        ExpressionAttributeNames: { '#value': 'value' },
        ExpressionAttributeValues: { ':at': now },
      },
    );
  }

  public async invalidate(name: string, now: number): Promise<void> {
    // A tombstone rather than a delete: it carries the time, which blocks older reads from landing.
    await this.doc.send(
      new PutCommand({
        TableName: this.tableName,
        Item: { pk: keys.cache(name), read_at: now, [RELAY_TABLE.ttlAttribute]: Math.ceil(now / 1000) + 3600 },
      }),
    );
  }
}
