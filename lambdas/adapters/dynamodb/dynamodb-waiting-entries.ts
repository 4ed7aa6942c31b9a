/**
 * WaitingTasks (issues 23, 29) in the relay table: one item `WAIT#<task_id>` per waiting standing
 * order, in the waiting index (RELAY_TABLE.waitingIndex: one partition, sorted by GPU type then
 * arrival), so a sweep reads the whole queue with one Query (paged at DynamoDB's 1 MB: about 2,500
 * entries a page) and a queue position reads one GPU type's part. No item has a TTL: an entry ends
 * only by `remove`, which frees its slots.
 *
 * Slots make the caps exact under concurrency: `WAITSLOTS#total` and `WAITSLOTS#key:<name>` hold one
 * attribute per task and their count `n`; a slot is taken by a write conditional on the count being
 * under the cap (MAX_WAITING_TASKS, MAX_WAITING_TASKS_PER_KEY) and on the task not holding it yet,
 * so a repeat takes nothing twice and two callers cannot both take the last slot. dynalite has no
 * transactions, so the writes are ordered instead: slots, then the entry; the entry's removal, then
 * its slots (a crash between leaves a slot held, never an entry without one).
 *
 * A removal is conditional (the entry exists, and is of the named round): of a cancel-task and the
 * watch, exactly one ends a wait.
 */
import { GetCommand, PutCommand, type DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import { storedAttributes } from '../aws-clients';
import type { WaitingCaps, WaitingTask, WaitingTasks } from '../../domain/ports';
import { queueKey, waitingCapText } from '../../domain/recovery/standing-orders';
import { keys, RELAY_TABLE } from '../../../contract/resources';
import { deleteItem, updateItem } from './dynamodb-item-writes';
import { hasFields } from './dynamodb-stored-values';

export const INDEX = RELAY_TABLE.waitingIndex;
/** The slots of every waiting task. */
export const TOTAL_SCOPE = 'total';
/** The slots of one caller key's waiting tasks. */
export const keyScope = (keyName: string): string => `key:${keyName}`;

const slotOf = (taskId: string): string => `s${taskId.replace(/[^A-Za-z0-9-]/g, '')}`;

/** The index sort key: GPU type (as the queue groups it), then arrival (ms, zero-padded), then the task id. */
export const queueOrder = (task: Pick<WaitingTask, 'request' | 'accepted_at' | 'task_id'>): string =>
  `${queueKey(task.request.gpu_type)}#${String(Math.max(0, Math.floor(task.accepted_at))).padStart(15, '0')}#${task.task_id}`;

export const isEntry = (value: unknown): value is WaitingTask =>
  hasFields<WaitingTask>(value, {
    task_id: 'string',
    round: 'number',
    accepted_at: 'number',
    waiting_until: 'number',
  }) && hasFields<WaitingTask['request']>(value.request, { gpu_type: 'string' });

/** Whether a slot was taken (or already held), or which cap refused it. */
type SlotOutcome = 'taken' | 'full';

/**
 * The queue's entries and slots without the listing (the job worker's cancel-task needs no Query, and
 * its bundle stays without it); DynamoDbWaitingTasks (./dynamodb-waiting-tasks.ts) adds the listing.
 */
export class DynamoDbWaitingEntries implements Omit<WaitingTasks, 'list'> {
  public constructor(
    protected readonly doc: DynamoDBDocumentClient,
    protected readonly tableName: string,
  ) {}

  public async add(task: WaitingTask): Promise<void> {
    // Slots first (no caps: the task was admitted), then the entry (replacing the task's earlier one).
    await this.takeSlot(TOTAL_SCOPE, task);
    if (task.key_name !== undefined) await this.takeSlot(keyScope(task.key_name), task);
    await this.put(task);
  }

  public async admit(task: WaitingTask, caps: WaitingCaps): Promise<string | undefined> {
    if (task.key_name !== undefined) {
      if ((await this.takeSlot(keyScope(task.key_name), task, caps.perKey)) === 'full')
        return waitingCapText({ cap: caps.perKey, keyName: task.key_name });
    }
    if ((await this.takeSlot(TOTAL_SCOPE, task, caps.total)) === 'full') {
      if (task.key_name !== undefined) await this.freeSlot(keyScope(task.key_name), task.task_id);
      return waitingCapText({ cap: caps.total });
    }
    await this.put(task);
    return undefined;
  }

  public async get(taskId: string): Promise<WaitingTask | undefined> {
    const { Item } = await this.doc.send(
      new GetCommand({ TableName: this.tableName, Key: { pk: keys.waiting(taskId) }, ConsistentRead: true }),
    );
    const entry: unknown = Item?.entry;
    return isEntry(entry) ? entry : undefined;
  }

  public async remove(taskId: string, round?: number): Promise<boolean> {
    const removed = await deleteItem(this.doc, this.tableName, keys.waiting(taskId), {
      ConditionExpression: round === undefined ? 'attribute_exists(#pk)' : '#entry.#round = :round',
      ExpressionAttributeNames: {
        ...(round === undefined ? { '#pk': 'pk' } : { '#entry': 'entry', '#round': 'round' }),
      },
      ...(round === undefined ? {} : { ExpressionAttributeValues: { ':round': round } }),
      ReturnValues: 'ALL_OLD',
    });
    if (!removed) return false;
    const entry: unknown = removed.Attributes?.entry;
    await this.freeSlot(TOTAL_SCOPE, taskId);
    if (isEntry(entry) && entry.key_name !== undefined) await this.freeSlot(keyScope(entry.key_name), taskId);
    return true;
  }

  private async put(task: WaitingTask): Promise<void> {
    await this.doc.send(
      new PutCommand({
        TableName: this.tableName,
        Item: {
          pk: keys.waiting(task.task_id),
          [INDEX.partitionKey]: INDEX.partition,
          [INDEX.sortKey]: queueOrder(task),
          entry: task,
        },
      }),
    );
  }

  /** Takes the task's slot in `scope` (under `cap` when given); a slot the task holds already counts as taken. */
  private async takeSlot(scope: string, task: WaitingTask, cap?: number): Promise<SlotOutcome> {
    const slot = slotOf(task.task_id);
    const pk = keys.waitingSlots(scope);
    const taken = await updateItem(this.doc, this.tableName, pk, {
      UpdateExpression: 'SET #slot = :at, #n = if_not_exists(#n, :zero) + :one',
      ConditionExpression:
        cap === undefined
          ? 'attribute_not_exists(#slot)'
          : 'attribute_not_exists(#slot) AND (attribute_not_exists(#n) OR #n < :cap)',
      ExpressionAttributeNames: { '#slot': slot, '#n': 'n' },
      ExpressionAttributeValues: {
        ':at': task.accepted_at,
        ':zero': 0,
        ':one': 1,
        ...(cap === undefined ? {} : { ':cap': cap }),
      },
    });
    if (taken) return 'taken';
    return (await storedAttributes(this.doc, this.tableName, pk, [slot]))[slot] !== undefined ? 'taken' : 'full';
  }

  private async freeSlot(scope: string, taskId: string): Promise<void> {
    // A failed condition: freed already (a repeated removal), nothing to count down.
    await updateItem(this.doc, this.tableName, keys.waitingSlots(scope), {
      UpdateExpression: 'REMOVE #slot SET #n = #n - :one',
      ConditionExpression: 'attribute_exists(#slot)',
      ExpressionAttributeNames: { '#slot': slotOf(taskId), '#n': 'n' },
      ExpressionAttributeValues: { ':one': 1 },
    });
  }
}

/** How many tasks hold a slot in the relay (`total`) or of one key: what the caps compare (tests, operators). */
export const slotsHeld = async (doc: DynamoDBDocumentClient, tableName: string, scope: string): Promise<number> => {
  const { Item } = await doc.send(
    new GetCommand({ TableName: tableName, Key: { pk: keys.waitingSlots(scope) }, ConsistentRead: true }),
  );
  return typeof Item?.n === 'number' ? Item.n : 0;
};
