/**
 * TaskRepository in the relay table (pk = TASK#<id>). Records carry created_at / updated_at /
 * finished_at as ISO strings and a `ttl` 30 days after their last change: DynamoDB deletes them
 * then, so GET /webhook/tasks/{id} answers for 30 days after a task ends.
 *
 * A create-order's container env values live in the same item as `order_env`, not in the workflow
 * input (execution history, EventBridge events): in clear within the item, which the table encrypts
 * at rest with KMS (the AWS-managed `aws/dynamodb` key, lib/constructs/relay-table.ts), for the
 * minutes a task runs; a standing order's (which may wait up to 24 h) is sealed like the replacement
 * copy below (issue 38 §7), and PlaceOrder's repository has the sealer to open it. `get` never
 * returns them; only `orderEnv` (PlaceOrder) reads them, and `finish` removes them in the same write
 * that makes the task final, so they live no longer than the task (the record's TTL covers a task
 * that never ends).
 *
 * A task whose on_outbid may replace its order keeps a copy as `replacement_env` (issue 23), and that
 * copy is sealed (issue 29 §6): AES-256-GCM under the KMS-protected data key of the caller keys (its
 * own HKDF label, lambdas/adapters/caller-key-sealer.ts), so the ~18 roles that may read task items
 * read only ciphertext. Without a sealer nothing is kept. It is dropped when the task fails (no order
 * to replace), when the fleet watch ends the order's lease (`dropReplacementEnv`), and at the latest
 * with the record (TTL). A copy stored in clear before issue 29 is still read, never written again.
 *
 * A create-order's access secrets (issue 37: the caller's root password, the Jupyter token, the
 * start-up script) are sealed as `order_access` (AES-256-GCM under the caller keys' data key, label
 * ORDER_ACCESS_INFO): PlaceOrder sends them, CheckOrder logs in with the password, ReportResult and
 * GET /webhook/tasks/{id} show the token to the task's own caller. Kept while the order may run:
 * dropped when the task fails, when the lease ends (`dropReplacementEnv`), at the latest with the
 * record. Without an access sealer a task carrying them is refused (never stored in clear).
 *
 * The final write also stores a `finish_token` (random, or the finisher's name): when its answer is
 * lost (timeout, reset) the SDK sends it again, and the repeat fails its own condition although the
 * write landed. `finish` then reads the record back and still answers true if the token is its own,
 * so the result that call recorded is delivered (by it, and by no other caller).
 */
import { randomUUID } from 'node:crypto';
import { DeleteCommand, GetCommand, type DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import * as z from 'zod/mini';
import { ENGLISH_TEXTS } from '../../domain/zod-texts';
import { storedAttributes } from '../aws-clients';
import { TaskAlreadyExistsError } from '../../domain/errors';
import type { KeySealer } from '../../domain/teams/caller-keys';
import type { SealedTaskInput, TaskRepository } from '../../domain/ports';
import type { OrderAccessSecrets } from '../../domain/access/order-access';
import {
  TaskKindSchema,
  TaskOriginSchema,
  TaskStateSchema,
  type TaskHistoryEntry,
  type TaskRecord,
  type TaskResult,
  type TaskState,
} from '../../domain/task';
import { keys } from '../../../contract/resources';
import { putItem, updateItem } from './dynamodb-item-writes';
import { lazy } from '../lazy';

/** How long a task record is kept after its last change. */
export const TASK_RETENTION_SECONDS = 30 * 24 * 3600;

/**
 * The stored shapes' schemas, built on a task's first read (issue 40 §1) rather than at import: a
 * route that only records tasks (every accept route) never builds them.
 */
const schemas = lazy(() => ({
  record: z.object({
    task_id: z.string().check(z.minLength(1)),
    kind: TaskKindSchema(),
    state: TaskStateSchema(),
    request: z.record(z.string(), z.unknown()),
    origin: TaskOriginSchema(),
    created_at: z.string(),
    updated_at: z.string(),
    finished_at: z.optional(z.string()),
    // Results are written only by this adapter from typed TaskResult values; check the shape loosely.
    result: z.optional(z.record(z.string(), z.unknown())),
    order_id: z.optional(z.int()),
    server_id: z.optional(z.int()),
    order_intent_at: z.optional(z.number()),
    order_refused_at: z.optional(z.number()),
    order_cancelled: z.optional(z.boolean()),
    waiting_until: z.optional(z.number()),
    history: z.optional(z.array(z.looseObject({ at: z.number(), event: z.string(), order_id: z.int() }))),
  }),
  orderEnv: z.record(z.string(), z.string()),
  orderAccess: z.object({
    ssh_password: z.optional(z.string()),
    jupyter_token: z.optional(z.string()),
    command: z.optional(z.string()),
  }),
}));

/** The item attribute holding the container env until the task ends (clear inside the KMS-encrypted table). */
export const ORDER_ENV_ATTRIBUTE = 'order_env';
/** The container env a task with an on_outbid replace mode keeps after it ends (issue 23), sealed (issue 29 §6): a successful `finish` leaves it. */
export const REPLACEMENT_ENV_ATTRIBUTE = 'replacement_env';
/** The sealed access secrets of a create-order (issue 37): kept until the order's lease ends. */
export const ORDER_ACCESS_ATTRIBUTE = 'order_access';
/** The item attribute naming the `finish` call whose write made the task final. */
export const FINISH_TOKEN_ATTRIBUTE = 'finish_token';
/** When a named finisher's result went out (markDelivered). */
export const DELIVERED_ATTRIBUTE = 'delivered_at';

const iso = (ms: number): string => new Date(ms).toISOString();
const ttlFrom = (ms: number): number => Math.floor(ms / 1000) + TASK_RETENTION_SECONDS;

const NOT_FINAL = 'attribute_exists(#pk) AND NOT (#state IN (:succeeded, :failed))';
const FINAL_VALUES = { ':succeeded': 'succeeded', ':failed': 'failed' } as const;

/** Task records in DynamoDB with exactly-once finishing. */
export class DynamoDbTaskRepository implements TaskRepository {
  /** `envSealer`: seals the kept replacement env; without one, none is kept. `accessSealer`: seals a create-order's access secrets. */
  public constructor(
    private readonly doc: DynamoDBDocumentClient,
    private readonly tableName: string,
    private readonly envSealer?: KeySealer,
    private readonly accessSealer?: KeySealer,
  ) {}

  /** Throws TaskAlreadyExistsError when the id is taken. */
  public async create(record: TaskRecord, sealed: SealedTaskInput = {}): Promise<void> {
    const createdMs = Date.parse(record.created_at);
    const hasEnv = sealed.orderEnv !== undefined && Object.keys(sealed.orderEnv).length > 0;
    const kept =
      hasEnv && sealed.keepForReplacement && this.envSealer
        ? await this.envSealer.seal(JSON.stringify(sealed.orderEnv))
        : undefined;
    if (hasEnv && sealed.sealOrderEnv && !this.envSealer)
      throw new Error("no sealer for a standing order's env: refusing to store it");
    // A standing order's env may wait up to 24 h: sealed like the replacement copy (issue 38 §7).
    const current =
      hasEnv && sealed.sealOrderEnv && this.envSealer
        ? await this.envSealer.seal(JSON.stringify(sealed.orderEnv))
        : sealed.orderEnv;
    const orderEnv = hasEnv
      ? {
          [ORDER_ENV_ATTRIBUTE]: current,
          ...(kept !== undefined ? { [REPLACEMENT_ENV_ATTRIBUTE]: kept } : {}),
        }
      : {};
    const access = sealed.sealedAccess ?? (await this.sealAccess(sealed.orderAccess));
    const created = await putItem(
      this.doc,
      this.tableName,
      {
        ...record,
        ...orderEnv,
        ...(access !== undefined ? { [ORDER_ACCESS_ATTRIBUTE]: access } : {}),
        pk: keys.task(record.task_id),
        ttl: ttlFrom(Number.isNaN(createdMs) ? Date.now() : createdMs),
      },
      { ConditionExpression: 'attribute_not_exists(#pk)', ExpressionAttributeNames: { '#pk': 'pk' } },
    );
    if (!created) throw new TaskAlreadyExistsError(record.task_id);
  }

  /** The record, or undefined when absent. Throws when the stored item is not a valid task. */
  public async get(taskId: string): Promise<TaskRecord | undefined> {
    const { Item } = await this.doc.send(
      new GetCommand({ TableName: this.tableName, Key: { pk: keys.task(taskId) }, ConsistentRead: true }),
    );
    if (!Item) return undefined;
    const {
      pk: _pk,
      ttl: _ttl,
      [ORDER_ENV_ATTRIBUTE]: _sealed,
      [REPLACEMENT_ENV_ATTRIBUTE]: _kept,
      [ORDER_ACCESS_ATTRIBUTE]: _access,
      [FINISH_TOKEN_ATTRIBUTE]: _token,
      [DELIVERED_ATTRIBUTE]: _delivered,
      ...rest
    } = Item;
    const parsed = schemas().record.parse(rest, ENGLISH_TEXTS);
    return { ...parsed, result: parsed.result as TaskResult | undefined } as TaskRecord;
  }

  /**
   * The container env of a task that is not final yet (opened from its seal for a standing order,
   * issue 38 §7); undefined when none is stored. A sealed env without a sealer to open it throws.
   */
  public async orderEnv(taskId: string): Promise<Readonly<Record<string, string>> | undefined> {
    const stored = await this.storedEnv(taskId, ORDER_ENV_ATTRIBUTE);
    if (typeof stored !== 'string')
      return stored === undefined ? undefined : schemas().orderEnv.parse(stored, ENGLISH_TEXTS);
    if (!this.envSealer) throw new Error("no sealer to open a standing order's env");
    return schemas().orderEnv.parse(JSON.parse(await this.envSealer.open(stored)), ENGLISH_TEXTS);
  }

  /** The env kept for a replacement round (on_outbid replace modes), also after the task ended; opened from its seal. */
  public async replacementEnv(taskId: string): Promise<Readonly<Record<string, string>> | undefined> {
    const stored = await this.storedEnv(taskId, REPLACEMENT_ENV_ATTRIBUTE);
    if (stored === undefined) return undefined;
    if (typeof stored !== 'string') return schemas().orderEnv.parse(stored, ENGLISH_TEXTS); // kept in clear before issue 29
    if (!this.envSealer) return undefined;
    return schemas().orderEnv.parse(JSON.parse(await this.envSealer.open(stored)), ENGLISH_TEXTS);
  }

  /**
   * Drops the kept replacement env and the access secrets (the order's lease ended: nothing will be
   * replaced, and the token is shown no more).
   */
  public async dropReplacementEnv(taskId: string): Promise<void> {
    await this.updateIfExists(taskId, {
      UpdateExpression: 'REMOVE #env, #access',
      ExpressionAttributeNames: { '#env': REPLACEMENT_ENV_ATTRIBUTE, '#access': ORDER_ACCESS_ATTRIBUTE },
    });
  }

  /** The task's sealed access secrets (issue 37), opened; undefined when none are kept (or no sealer to open them). */
  public async orderAccess(taskId: string): Promise<OrderAccessSecrets | undefined> {
    const stored = await this.storedEnv(taskId, ORDER_ACCESS_ATTRIBUTE);
    if (typeof stored !== 'string' || !this.accessSealer) return undefined;
    return schemas().orderAccess.parse(JSON.parse(await this.accessSealer.open(stored)), ENGLISH_TEXTS);
  }

  /** The task's access secrets as stored (sealed), to copy into another task without opening them. */
  public async sealedAccess(taskId: string): Promise<string | undefined> {
    const stored = await this.storedEnv(taskId, ORDER_ACCESS_ATTRIBUTE);
    return typeof stored === 'string' ? stored : undefined;
  }

  /** The sealed form of access secrets; undefined when there are none. Refuses to store them without a sealer. */
  private async sealAccess(access: OrderAccessSecrets | undefined): Promise<string | undefined> {
    if (!access || Object.values(access).every((v) => v === undefined)) return undefined;
    if (!this.accessSealer) throw new Error('no sealer for order access secrets: refusing to store them');
    return this.accessSealer.seal(JSON.stringify(access));
  }

  /** One env attribute of the task's item as stored (read alone, consistently). */
  private async storedEnv(taskId: string, attribute: string): Promise<unknown> {
    return (await storedAttributes(this.doc, this.tableName, keys.task(taskId), [attribute]))[attribute];
  }

  /**
   * Moves a non-final task to `state` and merges order_id / server_id. A final task keeps its state,
   * but still records order_id / server_id: a dangling order must stay findable. Missing task: no-op.
   */
  public async update(
    taskId: string,
    fields: {
      state?: TaskState;
      order_id?: number;
      server_id?: number;
      order_intent_at?: number;
      order_refused_at?: number;
      order_cancelled?: boolean;
      waiting_until?: number;
    },
    now: number,
  ): Promise<void> {
    const facts = {
      order_id: fields.order_id,
      server_id: fields.server_id,
      order_intent_at: fields.order_intent_at,
      order_refused_at: fields.order_refused_at,
      order_cancelled: fields.order_cancelled,
    };
    const moved = await this.set(
      taskId,
      { ...facts, state: fields.state, waiting_until: fields.waiting_until, updated_at: iso(now), ttl: ttlFrom(now) },
      NOT_FINAL,
      FINAL_VALUES,
    );
    if (moved) return;
    // Final: the facts alone. waiting_until is not one a final task keeps: only written with the state it belongs to.
    if (fields.waiting_until !== undefined || Object.values(facts).every((v) => v === undefined)) return;
    await this.set(taskId, { ...facts, updated_at: iso(now) }, 'attribute_exists(#pk)', {});
  }

  /**
   * Conditional on the task not being final: true only for the caller whose write made it final.
   * The same write removes the sealed container env: a finished task never needs it again.
   * A failed condition is read back (consistently): if the final write carries this call's token, it
   * was this call's own write, landed on an attempt whose answer was lost and failed on the SDK's
   * retry, and the answer is still true. Another caller's final write keeps it false.
   */
  public async finish(
    taskId: string,
    state: 'succeeded' | 'failed',
    result: TaskResult,
    now: number,
    finisher?: string,
  ): Promise<boolean> {
    // A named finisher's token is its name, so its retries (new calls) recognise its landed write too.
    const token = finisher ?? randomUUID();
    const finished = await this.set(
      taskId,
      {
        state,
        result,
        finished_at: iso(now),
        updated_at: iso(now),
        ttl: ttlFrom(now),
        [FINISH_TOKEN_ATTRIBUTE]: token,
      },
      NOT_FINAL,
      FINAL_VALUES,
      // A failed task placed no order to replace: its kept env goes too (issue 29 §6).
      // Its access secrets too: no order to get into (issue 37 §3).
      state === 'failed'
        ? [ORDER_ENV_ATTRIBUTE, REPLACEMENT_ENV_ATTRIBUTE, ORDER_ACCESS_ATTRIBUTE]
        : [ORDER_ENV_ATTRIBUTE],
    );
    if (finished) return true;
    const stored = await storedAttributes(this.doc, this.tableName, keys.task(taskId), [
      FINISH_TOKEN_ATTRIBUTE,
      DELIVERED_ATTRIBUTE,
    ]);
    // Ours, and (for a named finisher's retry) not yet delivered by an earlier call of it.
    return stored[FINISH_TOKEN_ATTRIBUTE] === token && stored[DELIVERED_ATTRIBUTE] === undefined;
  }

  public async markDelivered(taskId: string, now: number): Promise<void> {
    // A task without a record (a job run without ingress) has nothing to mark.
    await this.updateIfExists(taskId, {
      UpdateExpression: 'SET #delivered = :at',
      ExpressionAttributeNames: { '#delivered': DELIVERED_ATTRIBUTE },
      ExpressionAttributeValues: { ':at': iso(now) },
    });
  }

  public async appendHistory(taskId: string, entry: TaskHistoryEntry, now: number): Promise<void> {
    await this.updateIfExists(taskId, {
      UpdateExpression: 'SET #h = list_append(if_not_exists(#h, :empty), :entry), #u = :u',
      ExpressionAttributeNames: { '#h': 'history', '#u': 'updated_at' },
      ExpressionAttributeValues: { ':empty': [], ':entry': [entry], ':u': iso(now) },
    });
  }

  public async remove(taskId: string): Promise<void> {
    await this.doc.send(new DeleteCommand({ TableName: this.tableName, Key: { pk: keys.task(taskId) } }));
  }

  /** An update of the task's item if it exists (a missing record is left missing); `#pk` is added to its names. */
  private async updateIfExists(
    taskId: string,
    update: {
      readonly UpdateExpression: string;
      readonly ExpressionAttributeNames: Record<string, string>;
      readonly ExpressionAttributeValues?: Record<string, unknown>;
    },
  ): Promise<void> {
    await updateItem(this.doc, this.tableName, keys.task(taskId), {
      ...update,
      ConditionExpression: 'attribute_exists(#pk)',
      ExpressionAttributeNames: { ...update.ExpressionAttributeNames, '#pk': 'pk' },
    });
  }

  /**
   * SET every defined field (and REMOVE `remove`) under `condition` (names are aliased: `state` and
   * `ttl` are reserved words); false when the condition failed.
   */
  private async set(
    taskId: string,
    fields: Record<string, unknown>,
    condition: string,
    values: Record<string, unknown>,
    remove: readonly string[] = [],
  ): Promise<boolean> {
    const entries = Object.entries(fields).filter(([, v]) => v !== undefined);
    const names: Record<string, string> = { '#pk': 'pk', '#state': 'state' };
    const exprValues: Record<string, unknown> = { ...values };
    const sets = entries.map(([name, value], i) => {
      names[`#f${i}`] = name;
      exprValues[`:f${i}`] = value;
      return `#f${i} = :f${i}`;
    });
    const removes = remove.map((name, i) => {
      names[`#r${i}`] = name;
      return `#r${i}`;
    });
    if (!condition.includes('#state')) delete names['#state'];
    const written = await updateItem(this.doc, this.tableName, keys.task(taskId), {
      UpdateExpression: `SET ${sets.join(', ')}${removes.length > 0 ? ` REMOVE ${removes.join(', ')}` : ''}`,
      ConditionExpression: condition,
      ExpressionAttributeNames: names,
      ExpressionAttributeValues: Object.keys(exprValues).length > 0 ? exprValues : undefined,
    });
    return written !== undefined;
  }
}
