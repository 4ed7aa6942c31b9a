/**
 * WaitingTasks (issues 23, 29, 38) in the relay table: one item `WAIT#<task_id>` per waiting standing
 * order, in the waiting index (RELAY_TABLE.waitingIndex: one partition, sorted by GPU type then
 * arrival), so a sweep reads the whole queue with one Query (paged at DynamoDB's 1 MB: about 2,500
 * entries a page) and a queue position reads one GPU type's part. No item has a TTL: an entry ends
 * only by `remove`, which frees its slot.
 *
 * Slots make the caps exact under concurrency (issue 38 §1): ONE item, `WAITSLOTS#total`, holds one
 * attribute per task (`s<task>`: its key and when the slot was taken), the relay's count `n` and one
 * count per key (`k#<ref>`, keyCountOf; the default key is `default`). A slot is taken by one conditional write
 * that checks both caps (MAX_WAITING_TASKS, MAX_WAITING_TASKS_PER_KEY) and that the task holds none
 * yet, and changes the slot and both counts together, so the counts always match the slots and a
 * repeat takes nothing twice.
 *
 * The slot and the entry are two items and dynalite has no TransactWriteItems, so they are written in
 * order instead (slot, then entry; entry removal, then slot) and the slots are a count that can be
 * recomputed: an admission whose entry cannot be written (a number DynamoDB cannot store) gives its
 * slot back at once, and `recount` (the fleet watch, every sweep) makes the slots what the queue holds:
 * a slot whose entry is gone (a crash between the two writes) is freed once older than
 * SLOT_GRACE_MS, an entry without a slot gets one, counts that differ from the slots are set again.
 *
 * A removal is conditional (the entry exists, and is of the named round): of a cancel-task and the
 * watch, exactly one ends a wait.
 */
import { createHash } from 'node:crypto';
import { GetCommand, PutCommand, type DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import { storedAttributes } from '../aws-clients';
import type { WaitingCaps, WaitingTask, WaitingTasks } from '../../domain/ports';
import { queueKey, waitingCapText } from '../../domain/recovery/standing-orders';
import { DEFAULT_KEY_NAME } from '../../domain/teams/caller-keys';
import { keys, RELAY_TABLE } from '../../../contract/resources';
import { deleteItem, updateItem } from './dynamodb-item-writes';
import { hasFields } from './dynamodb-stored-values';

export const INDEX = RELAY_TABLE.waitingIndex;
/** The slots of every waiting task (their count: `slotsHeld(…, TOTAL_SCOPE)`). */
export const TOTAL_SCOPE = 'total';
/** One caller key's count among the slots (`slotsHeld(…, keyScope('ci'))`). */
export const keyScope = (keyName: string): string => `key:${keyName}`;
/** A slot without its entry is left alone this long: an admission writes its entry just after its slot. */
export const SLOT_GRACE_MS = 60_000;

const SLOTS_PK = keys.waitingSlots(TOTAL_SCOPE);
const COUNT = 'n';
/** Bumped by every slot write: a recount sets the counts only if no slot changed since it read them. */
const VERSION = 'v';
const SLOT_PREFIX = 's';
const KEY_COUNT_PREFIX = 'k#';
const slotOf = (taskId: string): string => `${SLOT_PREFIX}${taskId.replace(/[^A-Za-z0-9-]/g, '')}`;
/**
 * A caller key as the slots item names it: 8 base-36 characters of its SHA-256 (~41 bits: two of at
 * most 200 keys sharing one would share a cap, at odds of about 1 in 10^8), not its name of up to 64
 * characters, so that 1,000 slots of 64-character keys stay far under 100 KB (issue 38 §5).
 */
const keyRef = (keyName: string): string =>
  BigInt(`0x${createHash('sha256').update(keyName, 'utf8').digest('hex').slice(0, 11)}`)
    .toString(36)
    .padStart(8, '0')
    .slice(-8);
/** The attribute counting a key's slots in the slots item (tests read and set it through this). */
export const keyCountOf = (keyName: string): string => `${KEY_COUNT_PREFIX}${keyRef(keyName)}`;
/** The key a task counts against: its caller key, or the default key's name. */
const keyOf = (task: Pick<WaitingTask, 'key_name'>): string => task.key_name ?? DEFAULT_KEY_NAME;

/**
 * A slot as read: the count attribute of the task's key (`k#<ref>`) and when the slot was taken
 * (epoch ms). Stored as one short string, `<ms in base 36>|<key ref>` (about 54 bytes with its name);
 * a map `{key, at}` and, before issue 38, the accepted time alone are still read.
 */
interface StoredSlot {
  /** The key's count attribute. */
  readonly count?: string;
  readonly at: number;
}
const slotText = (key: string, at: number): string => `${Math.max(0, Math.floor(at)).toString(36)}|${keyRef(key)}`;
const slotValue = (value: unknown): StoredSlot | undefined => {
  if (typeof value === 'number') return { at: value };
  if (typeof value === 'string') {
    const bar = value.indexOf('|');
    const at = parseInt(value.slice(0, bar), 36);
    return bar > 0 && Number.isFinite(at) ? { at, count: `${KEY_COUNT_PREFIX}${value.slice(bar + 1)}` } : undefined;
  }
  return hasFields<{ at: number; key?: unknown }>(value, { at: 'number' })
    ? { at: value.at, ...(typeof value.key === 'string' ? { count: keyCountOf(value.key) } : {}) }
    : undefined;
};

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

/** A slot this call took, one the task held already, or which cap refused it. */
type SlotOutcome = 'took' | 'held' | { readonly refusal: string };

/**
 * The queue's entries and slots without the listing (the job worker's cancel-task needs no Query, and
 * its bundle stays without it); DynamoDbWaitingTasks (./dynamodb-waiting-tasks.ts) adds the listing
 * and the recount.
 */
export class DynamoDbWaitingEntries implements Omit<WaitingTasks, 'list'> {
  public constructor(
    protected readonly doc: DynamoDBDocumentClient,
    protected readonly tableName: string,
  ) {}

  public async add(task: WaitingTask): Promise<void> {
    // No caps (the task was admitted before), so never refused. The entry replaces the task's earlier one.
    const outcome = await this.takeSlot(task);
    await this.putGivingBack(task, outcome === 'took' ? 'took' : 'held');
  }

  public async admit(task: WaitingTask, caps: WaitingCaps): Promise<string | undefined> {
    const outcome = await this.takeSlot(task, caps);
    if (typeof outcome === 'object') return outcome.refusal;
    await this.putGivingBack(task, outcome);
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
    await this.freeSlot(slotOf(taskId), isEntry(entry) ? keyOf(entry) : undefined);
    return true;
  }

  /** Writes the entry; when that fails, a slot this call took is given back before the error goes on. */
  private async putGivingBack(task: WaitingTask, outcome: 'took' | 'held'): Promise<void> {
    try {
      await this.put(task);
    } catch (error) {
      if (outcome === 'took') await this.freeSlot(slotOf(task.task_id), keyOf(task)).catch(() => undefined);
      throw error;
    }
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

  /** Takes the task's slot (under both caps when given) in one write; a slot the task holds already is `held`. */
  protected async takeSlot(task: Pick<WaitingTask, 'task_id' | 'key_name'>, caps?: WaitingCaps): Promise<SlotOutcome> {
    const slot = slotOf(task.task_id);
    const key = keyOf(task);
    const taken = await updateItem(this.doc, this.tableName, SLOTS_PK, {
      UpdateExpression:
        'SET #slot = :slot, #n = if_not_exists(#n, :zero) + :one, #k = if_not_exists(#k, :zero) + :one, #v = if_not_exists(#v, :zero) + :one',
      ConditionExpression:
        caps === undefined
          ? 'attribute_not_exists(#slot)'
          : 'attribute_not_exists(#slot) AND (attribute_not_exists(#n) OR #n < :cap) AND (attribute_not_exists(#k) OR #k < :keyCap)',
      ExpressionAttributeNames: { '#slot': slot, '#n': COUNT, '#k': keyCountOf(key), '#v': VERSION },
      ExpressionAttributeValues: {
        ':slot': slotText(key, Date.now()),
        ':zero': 0,
        ':one': 1,
        ...(caps === undefined ? {} : { ':cap': caps.total, ':keyCap': caps.perKey }),
      },
    });
    if (taken) return 'took';
    const stored = await storedAttributes(this.doc, this.tableName, SLOTS_PK, [slot, keyCountOf(key)]);
    if (stored[slot] !== undefined || caps === undefined) return 'held';
    const keyCount = stored[keyCountOf(key)];
    return typeof keyCount === 'number' && keyCount >= caps.perKey
      ? { refusal: waitingCapText({ cap: caps.perKey, keyName: key }) }
      : { refusal: waitingCapText({ cap: caps.total }) };
  }

  /** Frees a slot and counts it down (its key's count too, when known); true when this call freed it. */
  protected async freeSlot(
    slot: string,
    key: string | undefined,
    count: string | undefined = key === undefined ? undefined : keyCountOf(key),
  ): Promise<boolean> {
    // A failed condition: freed already (a repeated removal), nothing to count down.
    const freed = await updateItem(this.doc, this.tableName, SLOTS_PK, {
      UpdateExpression: `REMOVE #slot SET #n = if_not_exists(#n, :one) - :one, #v = if_not_exists(#v, :zero) + :one${
        count === undefined ? '' : ', #k = if_not_exists(#k, :one) - :one'
      }`,
      ConditionExpression: 'attribute_exists(#slot)',
      ExpressionAttributeNames: {
        '#slot': slot,
        '#n': COUNT,
        '#v': VERSION,
        ...(count === undefined ? {} : { '#k': count }),
      },
      ExpressionAttributeValues: { ':one': 1, ':zero': 0 },
    });
    return freed !== undefined;
  }

  /**
   * Makes the slots what the queue holds (`listed`: the sweep's listing, read before): frees slots
   * whose entry is gone (older than SLOT_GRACE_MS, and gone on a consistent read), takes one for an
   * entry without (still there on a consistent read), and sets the counts again when they differ from
   * the slots (only if no slot changed since they were read). Returns how many things it repaired.
   */
  public async recount(listed: readonly WaitingTask[], nowMs: number): Promise<number> {
    let repaired = 0;
    const bySlot = new Map(listed.map((entry) => [slotOf(entry.task_id), entry]));
    const before = await this.slotsItem();
    for (const [name, value] of Object.entries(before)) {
      if (!name.startsWith(SLOT_PREFIX) || bySlot.has(name)) continue;
      const slot = slotValue(value);
      if (slot !== undefined && nowMs - slot.at < SLOT_GRACE_MS) continue;
      const taskId = name.slice(SLOT_PREFIX.length);
      if ((await this.get(taskId)) !== undefined) continue;
      if (await this.freeSlot(name, undefined, slot?.count)) repaired += 1;
    }
    for (const [name, entry] of bySlot) {
      if (before[name] !== undefined || (await this.get(entry.task_id)) === undefined) continue;
      if ((await this.takeSlot(entry)) === 'took') repaired += 1;
    }
    return repaired + (await this.recountCounts(bySlot));
  }

  /** Sets `n` and the per-key counts from the slots when they differ (a conditional write on the version read). */
  private async recountCounts(bySlot: ReadonlyMap<string, WaitingTask>): Promise<number> {
    const item = await this.slotsItem();
    const expected = new Map<string, number>([[COUNT, 0]]);
    for (const [name, value] of Object.entries(item)) {
      if (!name.startsWith(SLOT_PREFIX)) continue;
      expected.set(COUNT, (expected.get(COUNT) ?? 0) + 1);
      const listed = bySlot.get(name);
      const count = slotValue(value)?.count ?? (listed ? keyCountOf(keyOf(listed)) : undefined);
      if (count !== undefined) expected.set(count, (expected.get(count) ?? 0) + 1);
    }
    const counts = Object.keys(item).filter((name) => name === COUNT || name.startsWith(KEY_COUNT_PREFIX));
    const names = new Set([...counts, ...expected.keys()]);
    const wrong = [...names].filter((name) => (item[name] ?? 0) !== (expected.get(name) ?? 0));
    // A key count at 0 with no slot left is dropped (the item does not grow with every key ever seen).
    const dropped = counts.filter((name) => name !== COUNT && !expected.has(name));
    if (wrong.length === 0 && dropped.length === 0) return 0;
    const set = [...names].filter((name) => expected.has(name));
    const placeholder = (name: string): string => `#c${[...names].indexOf(name)}`;
    const version = item[VERSION];
    const written = await updateItem(this.doc, this.tableName, SLOTS_PK, {
      UpdateExpression: [
        `SET ${set.map((name) => `${placeholder(name)} = :c${[...names].indexOf(name)}`).join(', ')}`,
        ...(dropped.length ? [`REMOVE ${dropped.map(placeholder).join(', ')}`] : []),
      ].join(' '),
      ConditionExpression: typeof version === 'number' ? '#v = :v' : 'attribute_not_exists(#v)',
      ExpressionAttributeNames: {
        '#v': VERSION,
        ...Object.fromEntries([...names].map((name) => [placeholder(name), name])),
      },
      ExpressionAttributeValues: {
        ...(typeof version === 'number' ? { ':v': version } : {}),
        ...Object.fromEntries(set.map((name) => [`:c${[...names].indexOf(name)}`, expected.get(name) ?? 0])),
      },
    });
    return written ? wrong.length : 0;
  }

  private async slotsItem(): Promise<Record<string, unknown>> {
    const { Item } = await this.doc.send(
      new GetCommand({ TableName: this.tableName, Key: { pk: SLOTS_PK }, ConsistentRead: true }),
    );
    return Item ?? {};
  }
}

/** How many tasks hold a slot in the relay (`total`) or of one key (`key:<name>`): what the caps compare (tests, operators). */
export const slotsHeld = async (doc: DynamoDBDocumentClient, tableName: string, scope: string): Promise<number> => {
  const { Item } = await doc.send(
    new GetCommand({ TableName: tableName, Key: { pk: keys.waitingSlots(TOTAL_SCOPE) }, ConsistentRead: true }),
  );
  const name = scope === TOTAL_SCOPE ? COUNT : keyCountOf(scope.replace(/^key:/, ''));
  const value: unknown = Item?.[name];
  return typeof value === 'number' ? value : 0;
};
