/**
 * PlacementIntents in the relay table (issue 20, item 5).
 *
 * - `INTENT#open`: one item, one attribute `i<task_id>_<server_id>_<at>` per open intent holding
 *   `{task_id, server_id, at}` (about 90 bytes: thousands fit the 400 KB item). The fleet watch reads
 *   every open intent each sweep, so one item makes that one read, as `WATCH#orders` does.
 * - `OWNER#<order_id>`: `{owner}`, written once by a conditional put. The task that keeps an order and
 *   the watch that would cancel it as an orphan race on it; exactly one wins. A failed condition is
 *   read back, so a put whose answer was lost still counts as its own.
 */
import type { DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import { storedAttributes } from '../aws-clients';
import type { PlacementIntent, PlacementIntents } from '../../domain/ports';
import { keys } from '../../../contract/resources';
import { entryValues, removeEntry, setEntry } from './dynamodb-entry-attributes';
import { putItem } from './dynamodb-item-writes';
import { hasFields } from './dynamodb-stored-values';

/** An owner record outlives any intent's watch by far: a week. */
const OWNER_TTL_SECONDS = 7 * 24 * 3600;

const attributeOf = (intent: PlacementIntent): string =>
  `i${intent.task_id.replace(/[^A-Za-z0-9-]/g, '')}_${intent.server_id}_${intent.at}`;

const isIntent = (value: unknown): value is PlacementIntent =>
  hasFields<PlacementIntent>(value, { task_id: 'string', server_id: 'number', at: 'number' });

export class DynamoDbPlacementIntents implements PlacementIntents {
  public constructor(
    private readonly doc: DynamoDBDocumentClient,
    private readonly tableName: string,
  ) {}

  public async open(intent: PlacementIntent): Promise<void> {
    await setEntry(this.doc, this.tableName, keys.placementIntents(), attributeOf(intent), {
      task_id: intent.task_id,
      server_id: intent.server_id,
      at: intent.at,
    });
  }

  public async close(intent: PlacementIntent): Promise<void> {
    await removeEntry(this.doc, this.tableName, keys.placementIntents(), attributeOf(intent), false);
  }

  public async list(): Promise<readonly PlacementIntent[]> {
    return (await entryValues(this.doc, this.tableName, keys.placementIntents(), 'i'))
      .filter(isIntent)
      .sort((a, b) => a.at - b.at);
  }

  public async claimOrder(orderId: number, owner: string, now: number): Promise<boolean> {
    const pk = keys.orderOwner(orderId);
    const claimed = await putItem(
      this.doc,
      this.tableName,
      { pk, owner, claimed_at: now, ttl: Math.ceil(now / 1000) + OWNER_TTL_SECONDS },
      {
        ConditionExpression: 'attribute_not_exists(#pk) OR #owner = :owner',
        ExpressionAttributeNames: { '#pk': 'pk', '#owner': 'owner' },
        ExpressionAttributeValues: { ':owner': owner },
      },
    );
    return claimed !== undefined || (await storedAttributes(this.doc, this.tableName, pk, ['owner'])).owner === owner;
  }
}
