/**
 * IdempotencyStore in the relay table (pk = IDEM#<sha256 of the key>): the first request with an
 * Idempotency-Key binds it to its task id for 24 h; repeats get that task id and start nothing.
 *
 * Why our own conditional write and not Powertools idempotency: Powertools keys on a payload hash
 * and replays the stored *response*, and it records the in-progress/completed lifecycle of one
 * function call. We need (1) a key scoped to the header alone, answered with the FIRST request's
 * task_id even when the repeat's body differs, and (2) no cached error responses: a hand-off that
 * failed releases the key, so the client's retry runs for real instead of replaying a 503.
 */
import { createHash } from 'node:crypto';
import { GetCommand, type DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import { ConcurrentUpdateError } from '../../domain/errors';
import type { IdempotencyStore } from '../../domain/ports';
import { keys } from '../../../contract/resources';
import { deleteItem, putItem } from './dynamodb-item-writes';

/** How long a key binds (order-relay hardening: repeats within 24 h). */
export const IDEMPOTENCY_TTL_SECONDS = 24 * 3600;

/** The item family a store keeps its keys in: Idempotency-Key headers, or signed requests seen (contract/resources.ts). */
export type IdempotencyKeyFamily = typeof keys.idempotency | typeof keys.signedRequest;

/**
 * Idempotency keys with expiry checked on read (TTL deletion lags, and dynalite has none). The same
 * store, in its own item family (`keys.signedRequest`), binds each signed timestamped request to its
 * task: one signed request, one task (issue 21).
 */
export class DynamoDbIdempotencyStore implements IdempotencyStore {
  public constructor(
    private readonly doc: DynamoDBDocumentClient,
    private readonly tableName: string,
    private readonly family: IdempotencyKeyFamily = keys.idempotency,
  ) {}

  // Hashing keeps client-chosen strings (any length, any bytes) out of the key and within item limits.
  private pk(key: string): string {
    return this.family(createHash('sha256').update(key, 'utf8').digest('hex'));
  }

  /** Binds `key` to `taskId` unless it is bound and unexpired; returns the task id bound now. */
  public async claim(
    key: string,
    taskId: string,
    now: number,
    ttlSeconds: number = IDEMPOTENCY_TTL_SECONDS,
  ): Promise<string> {
    const expiresAt = now + ttlSeconds * 1000;
    // A second round only happens if the winner's item expired or was released between our put and get.
    for (let attempt = 0; attempt < 3; attempt += 1) {
      const bound = await putItem(
        this.doc,
        this.tableName,
        { pk: this.pk(key), task_id: taskId, expires_at: expiresAt, ttl: Math.ceil(expiresAt / 1000) },
        {
          ConditionExpression: 'attribute_not_exists(#pk) OR #expires <= :now',
          ExpressionAttributeNames: { '#pk': 'pk', '#expires': 'expires_at' },
          ExpressionAttributeValues: { ':now': now },
        },
      );
      if (bound) return taskId;
      const { Item } = await this.doc.send(
        new GetCommand({ TableName: this.tableName, Key: { pk: this.pk(key) }, ConsistentRead: true }),
      );
      if (Item && typeof Item.task_id === 'string' && typeof Item.expires_at === 'number' && Item.expires_at > now) {
        return Item.task_id;
      }
    }
    throw new ConcurrentUpdateError('idempotency key is contended');
  }

  /** Unbinds the key if `taskId` holds it (the hand-off failed), so a retry is processed afresh. */
  public async release(key: string, taskId: string): Promise<void> {
    await deleteItem(this.doc, this.tableName, this.pk(key), {
      ConditionExpression: '#task = :task',
      ExpressionAttributeNames: { '#task': 'task_id' },
      ExpressionAttributeValues: { ':task': taskId },
    });
  }
}
