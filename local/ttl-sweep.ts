/**
 * DynamoDB's TTL for the local table: dynalite has none, so a kept state would grow with every
 * rate-limit window, cache entry, claim and idempotency key. The sweep scans for items whose `ttl`
 * (RELAY_TABLE.ttlAttribute, epoch seconds) has passed and deletes them, as the TTL service would
 * (it too deletes late: readers never trust an item's presence past its ttl).
 */
import { DeleteItemCommand, DynamoDBClient, ScanCommand, type AttributeValue } from '@aws-sdk/client-dynamodb';
import { RELAY_TABLE } from '../contract/resources';

export interface TtlSweepOptions {
  readonly endpoint: string;
  readonly tableName: string;
  readonly region?: string;
  /** The clock (epoch ms). @default Date.now */
  readonly now?: () => number;
}

export interface TtlSweepResult {
  readonly scanned: number;
  readonly deleted: number;
}

export interface TtlSweeper {
  /** One pass over the table. */
  sweep(): Promise<TtlSweepResult>;
  close(): void;
}

/** DynamoDB ignores a `ttl` more than five years in the past (a value in the wrong unit, most likely). */
const FIVE_YEARS_SECONDS = 5 * 365 * 24 * 3600;

export const createTtlSweeper = (options: TtlSweepOptions): TtlSweeper => {
  const client = new DynamoDBClient({
    endpoint: options.endpoint,
    region: options.region ?? 'us-east-1',
    credentials: { accessKeyId: 'local', secretAccessKey: 'local' },
  });
  const now = options.now ?? Date.now;
  const key = RELAY_TABLE.partitionKey;

  const sweep = async (): Promise<TtlSweepResult> => {
    const nowSeconds = Math.floor(now() / 1000);
    let scanned = 0;
    let deleted = 0;
    let start: Record<string, AttributeValue> | undefined;
    do {
      const page = await client.send(
        new ScanCommand({
          TableName: options.tableName,
          FilterExpression: '#ttl < :now AND #ttl > :oldest',
          ExpressionAttributeNames: { '#ttl': RELAY_TABLE.ttlAttribute, '#pk': key },
          ExpressionAttributeValues: {
            ':now': { N: String(nowSeconds) },
            ':oldest': { N: String(nowSeconds - FIVE_YEARS_SECONDS) },
          },
          ProjectionExpression: '#pk',
          ...(start ? { ExclusiveStartKey: start } : {}),
        }),
      );
      scanned += page.ScannedCount ?? 0;
      const keys = (page.Items ?? []).map((item) => ({ [key]: item[key] }));
      // One conditional delete per item, a few at a time: an item written again since the scan
      // (a refreshed window, a new claim) has a later ttl and stays, as with DynamoDB's TTL.
      for (let i = 0; i < keys.length; i += 8) {
        const results = await Promise.all(
          keys.slice(i, i + 8).map((Key) =>
            client
              .send(
                new DeleteItemCommand({
                  TableName: options.tableName,
                  Key,
                  ConditionExpression: '#ttl < :now',
                  ExpressionAttributeNames: { '#ttl': RELAY_TABLE.ttlAttribute },
                  ExpressionAttributeValues: { ':now': { N: String(nowSeconds) } },
                }),
              )
              .then(
                () => 1,
                (error: unknown) => {
                  if ((error as Error).name === 'ConditionalCheckFailedException') return 0;
                  throw error;
                },
              ),
          ),
        );
        deleted += results.reduce((a, b) => a + b, 0);
      }
      start = page.LastEvaluatedKey;
    } while (start);
    return { scanned, deleted };
  };

  return { sweep, close: () => client.destroy() };
};
