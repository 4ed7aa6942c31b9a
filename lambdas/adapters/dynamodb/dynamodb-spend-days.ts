/**
 * The spend ledger's day totals (`SPEND#<day>`, written by ./dynamodb-spend-store.ts), read by key:
 * BatchGetItem, 100 days per call, unprocessed keys retried. Apart from the store so that only
 * GET /webhook/spend carries it.
 */
import { BatchGetCommand, type DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import { keys } from '../../../contract/resources';
import { readSpendDay, type SpendDay, type SpendDays } from '../../domain/teams/spend-ledger';

/** Rounds of unprocessed keys retried per batch before giving up (DynamoDB throttling). */
const MAX_ROUNDS = 10;

export class DynamoDbSpendDays implements SpendDays {
  public constructor(
    private readonly doc: DynamoDBDocumentClient,
    private readonly tableName: string,
  ) {}

  public async days(days: readonly string[]): Promise<ReadonlyMap<string, SpendDay>> {
    const found = new Map<string, SpendDay>();
    const byKey = new Map(days.map((day) => [keys.spendDay(day), day]));
    for (let i = 0; i < days.length; i += 100) {
      let request: Record<string, { Keys: Record<string, unknown>[] }> | undefined = {
        [this.tableName]: { Keys: days.slice(i, i + 100).map((day) => ({ pk: keys.spendDay(day) })) },
      };
      for (let round = 0; request?.[this.tableName]?.Keys.length; round += 1) {
        if (round >= MAX_ROUNDS) throw new Error('spend days could not be read (throttled); try again');
        const answer = await this.doc.send(new BatchGetCommand({ RequestItems: request }));
        for (const item of answer.Responses?.[this.tableName] ?? []) {
          const day = byKey.get(String(item.pk));
          if (day !== undefined) found.set(day, readSpendDay(day, item));
        }
        request = answer.UnprocessedKeys as typeof request;
      }
    }
    return found;
  }
}
