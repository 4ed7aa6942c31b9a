/**
 * Marketplace pacing shared by every Lambda instance: one item per API key holds the next free
 * send slot, claimed with optimistic conditional writes. Runs unchanged against dynalite.
 */
import { ConditionalCheckFailedException } from '@aws-sdk/client-dynamodb';
import { GetCommand, UpdateCommand, type DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import { ConcurrentUpdateError } from '../domain/errors';
import type { PacingGate } from '../domain/ports';
import { keys, RELAY_TABLE } from '../../lib/relay-resources';

/** Lost races before giving up; each lost race means another caller got a slot, so this is ample. */
const MAX_ATTEMPTS = 50;
/** Pacing items outlive their slot by an hour, then TTL removes them. */
const TTL_MARGIN_SECONDS = 3600;

const isConditionFailure = (error: unknown): boolean =>
  error instanceof ConditionalCheckFailedException || (error as { name?: unknown })?.name === 'ConditionalCheckFailedException';

export class DynamoDbPacingGate implements PacingGate {
  public constructor(
    private readonly doc: DynamoDBDocumentClient,
    private readonly tableName: string,
  ) {}

  /** Claims the earliest slot at or after `now` that is `intervalMs` past the previous claim. */
  public async acquire(keyId: string, intervalMs: number, now: number): Promise<number> {
    const pk = keys.pacing(keyId);
    for (let attempt = 0; attempt < MAX_ATTEMPTS; attempt += 1) {
      // Fast path, one write: the key is idle, so the slot is now.
      if (await this.claim(pk, now, intervalMs, { idleAt: now })) return now;

      const { Item } = await this.doc.send(new GetCommand({ TableName: this.tableName, Key: { pk }, ConsistentRead: true }));
      const nextFree = typeof Item?.next_free === 'number' ? Item.next_free : undefined;
      // The slot freed up between the two calls: take the fast path again.
      if (nextFree === undefined || nextFree <= now) continue;
      if (await this.claim(pk, nextFree, intervalMs, { expected: nextFree })) return nextFree;
    }
    throw new ConcurrentUpdateError(`marketplace pacing slot for ${keyId} stayed contended`);
  }

  private async claim(pk: string, slot: number, intervalMs: number, when: { idleAt?: number; expected?: number }): Promise<boolean> {
    const next = slot + intervalMs;
    const condition = when.expected === undefined
      ? 'attribute_not_exists(next_free) OR next_free <= :cmp'
      : 'next_free = :cmp';
    try {
      await this.doc.send(new UpdateCommand({
        TableName: this.tableName,
        Key: { pk },
        UpdateExpression: 'SET next_free = :next, #ttl = :ttl',
        ConditionExpression: condition,
        ExpressionAttributeNames: { '#ttl': RELAY_TABLE.ttlAttribute },
        ExpressionAttributeValues: {
          ':next': next,
          ':cmp': when.expected ?? when.idleAt,
          ':ttl': Math.ceil(next / 1000) + TTL_MARGIN_SECONDS,
        },
      }));
      return true;
    } catch (error) {
      if (isConditionFailure(error)) return false;
      throw error;
    }
  }
}
