/**
 * PendingReplacements (issue 23) in the relay table: one item `REPLACE#pending`, one attribute
 * `r<round task id>` per replacement round under way (about 200 bytes). The fleet watch reads them
 * all in one GetItem each sweep, as it reads `WAIT#tasks`. A removal is conditional: of overlapping
 * sweeps, exactly one settles a round.
 */
import { GetCommand, UpdateCommand, type DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import { isConditionalCheckFailed } from '../aws-clients';
import type { PendingReplacement, PendingReplacements } from '../../domain/recovery/outbid-replacement';
import { keys } from '../../../contract/resources';

const attributeOf = (taskId: string): string => `r${taskId.replace(/[^A-Za-z0-9-]/g, '')}`;

const isEntry = (value: unknown): value is PendingReplacement => {
  const v = value as Partial<PendingReplacement> | null;
  return (
    typeof v?.task_id === 'string' &&
    typeof v.parent_task_id === 'string' &&
    typeof v.from_order_id === 'number' &&
    typeof v.from_server_id === 'number' &&
    typeof v.started_at === 'number'
  );
};

export class DynamoDbPendingReplacements implements PendingReplacements {
  public constructor(
    private readonly doc: DynamoDBDocumentClient,
    private readonly tableName: string,
  ) {}

  public async add(entry: PendingReplacement): Promise<void> {
    await this.doc.send(
      new UpdateCommand({
        TableName: this.tableName,
        Key: { pk: keys.replacements() },
        UpdateExpression: 'SET #r = :entry',
        ExpressionAttributeNames: { '#r': attributeOf(entry.task_id) },
        ExpressionAttributeValues: { ':entry': entry },
      }),
    );
  }

  public async list(): Promise<readonly PendingReplacement[]> {
    const { Item } = await this.doc.send(
      new GetCommand({ TableName: this.tableName, Key: { pk: keys.replacements() }, ConsistentRead: true }),
    );
    return Object.entries(Item ?? {})
      .filter(([name]) => name.startsWith('r'))
      .map(([, value]) => value)
      .filter(isEntry);
  }

  public async remove(taskId: string): Promise<boolean> {
    try {
      await this.doc.send(
        new UpdateCommand({
          TableName: this.tableName,
          Key: { pk: keys.replacements() },
          UpdateExpression: 'REMOVE #r',
          ConditionExpression: 'attribute_exists(#r)',
          ExpressionAttributeNames: { '#r': attributeOf(taskId) },
        }),
      );
      return true;
    } catch (error) {
      if (isConditionalCheckFailed(error)) return false;
      throw error;
    }
  }
}
