/**
 * WaitingTasks (issues 23, 29) in the relay table: the entries and slots of ./dynamodb-waiting-entries.ts
 * (one item per waiting task, exact caps) and the listing, one Query on the waiting index.
 */
import { QueryCommand, type QueryCommandInput } from '@aws-sdk/lib-dynamodb';
import type { WaitingTask, WaitingTasks } from '../../domain/ports';
import { byArrival, queueKey } from '../../domain/recovery/standing-orders';
import { DynamoDbWaitingEntries, INDEX, isEntry } from './dynamodb-waiting-entries';

export { keyScope, queueOrder, TOTAL_SCOPE } from './dynamodb-waiting-entries';

export class DynamoDbWaitingTasks extends DynamoDbWaitingEntries implements WaitingTasks {
  public async list(gpuType?: string): Promise<readonly WaitingTask[]> {
    const group = gpuType === undefined ? undefined : queueKey(gpuType);
    const input: QueryCommandInput = {
      TableName: this.tableName,
      IndexName: INDEX.name,
      KeyConditionExpression: group === undefined ? '#wq = :wq' : '#wq = :wq AND begins_with(#order, :group)',
      ExpressionAttributeNames: {
        '#wq': INDEX.partitionKey,
        ...(group === undefined ? {} : { '#order': INDEX.sortKey }),
      },
      ExpressionAttributeValues: { ':wq': INDEX.partition, ...(group === undefined ? {} : { ':group': `${group}#` }) },
    };
    const entries: WaitingTask[] = [];
    let start: Record<string, unknown> | undefined;
    do {
      const page = await this.doc.send(new QueryCommand({ ...input, ...(start ? { ExclusiveStartKey: start } : {}) }));
      for (const item of page.Items ?? []) if (isEntry(item.entry)) entries.push(item.entry);
      start = page.LastEvaluatedKey;
    } while (start !== undefined);
    // A GPU type that contains `#` may share a prefix with another: keep exactly the asked group.
    return (group === undefined ? entries : entries.filter((e) => queueKey(e.request.gpu_type) === group)).sort(
      byArrival,
    );
  }
}
