/**
 * The spend ledger's day totals (`SPEND#<day>`, written by ./dynamodb-spend-store.ts), read by key:
 * BatchGetItem, 100 days per call, unprocessed keys retried. Apart from the store so that only
 * GET /webhook/spend carries it.
 */
import type { DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import { keys } from '../../../contract/resources';
import { readSpendDay, type SpendDay, type SpendDays } from '../../domain/teams/spend-ledger';
import { batchGetItems } from './dynamodb-batch-get';

export class DynamoDbSpendDays implements SpendDays {
  public constructor(
    private readonly doc: DynamoDBDocumentClient,
    private readonly tableName: string,
  ) {}

  public async days(days: readonly string[]): Promise<ReadonlyMap<string, SpendDay>> {
    const found = new Map<string, SpendDay>();
    const byKey = new Map(days.map((day) => [keys.spendDay(day), day]));
    const pks = days.map((day) => keys.spendDay(day));
    for (const item of await batchGetItems(this.doc, this.tableName, pks, 'spend days')) {
      const day = byKey.get(String(item.pk));
      if (day !== undefined) found.set(day, readSpendDay(day, item));
    }
    return found;
  }
}
