/**
 * WaitingTasks (issue 23) in the relay table: one item `WAIT#tasks`, one attribute `w<task_id>` per
 * waiting standing order holding its entry (about 300 bytes: over a thousand fit the 400 KB item).
 * The fleet watch reads the whole queue in one GetItem each sweep, as it reads `INTENT#open`.
 * A removal is conditional (the entry exists, and is of the named round): of a cancel-task and the
 * watch, exactly one ends a wait.
 */
import { GetCommand, UpdateCommand, type DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import { isConditionalCheckFailed } from './aws-clients';
import type { WaitingTask, WaitingTasks } from '../domain/ports';
import { byArrival } from '../domain/standing-orders';
import { keys } from '../../contract/resources';

const attributeOf = (taskId: string): string => `w${taskId.replace(/[^A-Za-z0-9-]/g, '')}`;

const isEntry = (value: unknown): value is WaitingTask => {
  const v = value as Partial<WaitingTask> | null;
  return (
    typeof v?.task_id === 'string' &&
    typeof v.round === 'number' &&
    typeof v.accepted_at === 'number' &&
    typeof v.waiting_until === 'number' &&
    typeof v.request?.gpu_type === 'string'
  );
};

export class DynamoDbWaitingTasks implements WaitingTasks {
  public constructor(
    private readonly doc: DynamoDBDocumentClient,
    private readonly tableName: string,
  ) {}

  public async add(task: WaitingTask): Promise<void> {
    await this.doc.send(
      new UpdateCommand({
        TableName: this.tableName,
        Key: { pk: keys.waiting() },
        UpdateExpression: 'SET #w = :task',
        ExpressionAttributeNames: { '#w': attributeOf(task.task_id) },
        ExpressionAttributeValues: { ':task': task },
      }),
    );
  }

  public async list(): Promise<readonly WaitingTask[]> {
    const { Item } = await this.doc.send(
      new GetCommand({ TableName: this.tableName, Key: { pk: keys.waiting() }, ConsistentRead: true }),
    );
    return Object.entries(Item ?? {})
      .filter(([name]) => name.startsWith('w'))
      .map(([, value]) => value)
      .filter(isEntry)
      .sort(byArrival);
  }

  public async remove(taskId: string, round?: number): Promise<boolean> {
    try {
      await this.doc.send(
        new UpdateCommand({
          TableName: this.tableName,
          Key: { pk: keys.waiting() },
          UpdateExpression: 'REMOVE #w',
          ConditionExpression: round === undefined ? 'attribute_exists(#w)' : '#w.#round = :round',
          ExpressionAttributeNames: {
            '#w': attributeOf(taskId),
            ...(round === undefined ? {} : { '#round': 'round' }),
          },
          ...(round === undefined ? {} : { ExpressionAttributeValues: { ':round': round } }),
        }),
      );
      return true;
    } catch (error) {
      if (isConditionalCheckFailed(error)) return false;
      throw error;
    }
  }
}
