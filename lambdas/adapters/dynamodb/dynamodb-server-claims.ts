/**
 * ServerClaims in the relay table (pk = CLAIM#<serverId>): a claim is free, expired or ours, and a
 * conditional put decides among concurrent tasks. `ttl` lets DynamoDB clean up; `expires_at` (ms)
 * is what the condition checks, because TTL deletion lags by hours.
 */
import type { DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import type { ServerClaims } from '../../domain/ports';
import { keys } from '../../../contract/resources';
import { deleteItem, putItem } from './dynamodb-item-writes';

/** One task at a time per marketplace server. */
export class DynamoDbServerClaims implements ServerClaims {
  public constructor(
    private readonly doc: DynamoDBDocumentClient,
    private readonly tableName: string,
  ) {}

  /** True when the server is now claimed by `taskId` (it was free, the old claim expired, or it was already ours). */
  public async claim(serverId: number, taskId: string, now: number, ttlSeconds: number): Promise<boolean> {
    const expiresAt = now + ttlSeconds * 1000;
    const claimed = await putItem(
      this.doc,
      this.tableName,
      { pk: keys.claim(serverId), task_id: taskId, expires_at: expiresAt, ttl: Math.ceil(expiresAt / 1000) },
      {
        ConditionExpression: 'attribute_not_exists(#pk) OR #expires <= :now OR #task = :task',
        ExpressionAttributeNames: { '#pk': 'pk', '#expires': 'expires_at', '#task': 'task_id' },
        ExpressionAttributeValues: { ':now': now, ':task': taskId },
      },
    );
    return claimed !== undefined;
  }

  /** Releases the claim only if `taskId` holds it; someone else's claim is left alone. */
  public async release(serverId: number, taskId: string): Promise<void> {
    await deleteItem(this.doc, this.tableName, keys.claim(serverId), {
      ConditionExpression: '#task = :task',
      ExpressionAttributeNames: { '#task': 'task_id' },
      ExpressionAttributeValues: { ':task': taskId },
    });
  }
}
