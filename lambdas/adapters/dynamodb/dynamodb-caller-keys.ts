/**
 * Caller keys in the relay table (issue 24): one item `KEYS#all` with a map `keys` of name → record
 * (sealed secret included), so listing needs no Scan (no function may Scan the table) and a lookup
 * is one GetItem. At most MAX_CALLER_KEYS keys (about 400 bytes each, far under 400 KB).
 *
 * Reads are cached per instance for `cacheSeconds` (CALLER_KEY_CACHE_SECONDS, at most 60): that is
 * how long a revocation may take to reach a warm instance. A name the cache does not know is read
 * again at once (at most every FRESH_READ_FLOOR_MS per instance; the per-address rate limit bounds a
 * flood of made-up names further), so a key works as soon as it is created.
 */
import { GetCommand, type DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import { keys } from '../../../contract/resources';
import { SCOPES } from '../../../contract/scopes';
import {
  KeyLimitReachedError,
  MAX_CALLER_KEYS,
  type CallerKeyRecord,
  type CallerKeyStore,
} from '../../domain/teams/caller-keys';
import { updateItem, type ItemUpdate } from './dynamodb-item-writes';
import { hasFields } from './dynamodb-stored-values';

/**
 * The map of deleted keys' names (name → Unix seconds deleted): a name stays taken for
 * DELETED_NAME_DAYS (issue 38 §5: not forever, so the item stays bounded, about one line per delete
 * of the last 30 days); each delete drops the names older than that.
 */
export const DELETED_ATTRIBUTE = 'deleted';

/** How long a deleted key's name stays taken. */
export const DELETED_NAME_DAYS = 30;

/** Expired names one delete drops (its expression stays under DynamoDB's 4 KB). */
const DELETED_PRUNE_CHUNK = 200;

/** The least time between two cache-bypassing reads of one instance (unknown key ids). */
export const FRESH_READ_FLOOR_MS = 100;

const isRecord = (value: unknown): value is CallerKeyRecord =>
  hasFields<CallerKeyRecord>(value, { name: 'string', secret: 'string', created_at: 'number' }) &&
  Array.isArray(value.scopes) &&
  value.scopes.every((s) => (SCOPES as readonly string[]).includes(s));

export class DynamoDbCallerKeys implements CallerKeyStore {
  private cached: { readonly at: number; readonly records: readonly CallerKeyRecord[] } | undefined;
  private lastFreshAt = -Infinity;

  public constructor(
    private readonly doc: DynamoDBDocumentClient,
    private readonly tableName: string,
    private readonly cacheSeconds: number,
    private readonly clock: () => number = Date.now,
  ) {}

  public async list(options: { readonly fresh?: boolean } = {}): Promise<readonly CallerKeyRecord[]> {
    const now = this.clock();
    const cached = this.cached;
    const age = cached === undefined ? Infinity : now - cached.at;
    const fresh = options.fresh === true && now - this.lastFreshAt >= FRESH_READ_FLOOR_MS;
    if (cached !== undefined && age < this.cacheSeconds * 1000 && !fresh) return cached.records;
    if (fresh) this.lastFreshAt = now;
    const { map } = await this.read();
    const records = Object.values(map)
      .filter(isRecord)
      .sort((a, b) => a.name.localeCompare(b.name));
    this.cached = { at: now, records };
    return records;
  }

  /** The `KEYS#all` item (read consistently) and its map of keys. */
  private async read(): Promise<{ readonly item?: Record<string, unknown>; readonly map: Record<string, unknown> }> {
    const { Item } = await this.doc.send(
      new GetCommand({ TableName: this.tableName, Key: { pk: keys.callerKeys() }, ConsistentRead: true }),
    );
    return { item: Item, map: (Item?.keys ?? {}) as Record<string, unknown> };
  }

  /** An UpdateItem of the `KEYS#all` item: its answer, or undefined when its condition failed. */
  private update(update: ItemUpdate) {
    return updateItem(this.doc, this.tableName, keys.callerKeys(), update);
  }

  /** Creates the item's maps (`keys`; `deleted`, the names of deleted keys) where missing: their entries can then be set. */
  private async ensureMaps(): Promise<void> {
    await this.update({
      UpdateExpression: 'SET #keys = if_not_exists(#keys, :empty), #deleted = if_not_exists(#deleted, :empty)',
      ExpressionAttributeNames: { '#keys': 'keys', '#deleted': DELETED_ATTRIBUTE },
      ExpressionAttributeValues: { ':empty': {} },
    });
  }

  public async add(record: CallerKeyRecord): Promise<boolean> {
    await this.ensureMaps();
    const added = await this.update({
      UpdateExpression: 'SET #keys.#name = :record REMOVE #deleted.#name',
      // A deleted key's name stays taken for DELETED_NAME_DAYS: it names that key's orders (issue 29 §7).
      ConditionExpression:
        'attribute_not_exists(#keys.#name) AND (attribute_not_exists(#deleted.#name) OR #deleted.#name <= :freed) AND size(#keys) < :max',
      ExpressionAttributeNames: { '#keys': 'keys', '#deleted': DELETED_ATTRIBUTE, '#name': record.name },
      ExpressionAttributeValues: {
        ':record': record,
        ':max': MAX_CALLER_KEYS,
        ':freed': record.created_at - DELETED_NAME_DAYS * 86_400,
      },
    });
    if (added) {
      this.cached = undefined;
      return true;
    }
    const { item, map } = await this.read();
    const existing = map[record.name];
    // Our own write whose answer was lost (same sealed secret) counts as added.
    if (isRecord(existing) && existing.secret === record.secret) return true;
    if (existing !== undefined) return false;
    const deletedAt = (item?.[DELETED_ATTRIBUTE] as Record<string, unknown> | undefined)?.[record.name];
    if (typeof deletedAt === 'number' && deletedAt > record.created_at - DELETED_NAME_DAYS * 86_400) return false;
    throw new KeyLimitReachedError(MAX_CALLER_KEYS);
  }

  public async remove(name: string, nowSeconds: number): Promise<'deleted' | 'active' | 'unknown'> {
    await this.ensureMaps();
    return this.removeKey(name, nowSeconds);
  }

  /**
   * The delete, and the names deleted more than DELETED_NAME_DAYS ago with it (unconditionally: such a
   * name changes only when a create takes it again, which removes it from the map itself).
   */
  private async removeKey(name: string, nowSeconds: number): Promise<'deleted' | 'active' | 'unknown'> {
    const { item } = await this.read();
    const freedBefore = nowSeconds - DELETED_NAME_DAYS * 86_400;
    const expired = Object.entries((item?.[DELETED_ATTRIBUTE] ?? {}) as Record<string, unknown>)
      .filter(([old, at]) => old !== name && typeof at === 'number' && at <= freedBefore)
      .slice(0, DELETED_PRUNE_CHUNK)
      .map(([old]) => old);
    const names = Object.fromEntries(expired.map((old, i) => [`#x${i}`, old]));
    const drops = expired.map((_, i) => `, #deleted.#x${i}`).join('');
    return this.changeKey(
      name,
      {
        UpdateExpression: `REMOVE #keys.#name${drops} SET #deleted.#name = :now`,
        ConditionExpression: 'attribute_exists(#keys.#name.#revoked)',
        ExpressionAttributeNames: {
          '#keys': 'keys',
          '#deleted': DELETED_ATTRIBUTE,
          '#name': name,
          '#revoked': 'revoked_at',
          ...names,
        },
        ExpressionAttributeValues: { ':now': nowSeconds },
      },
      { changed: 'deleted', refused: 'active' },
    );
  }

  public async revoke(name: string, nowSeconds: number): Promise<'revoked' | 'already' | 'unknown'> {
    return this.changeKey(
      name,
      {
        UpdateExpression: 'SET #keys.#name.#revoked = :now',
        ConditionExpression: 'attribute_exists(#keys.#name) AND attribute_not_exists(#keys.#name.#revoked)',
        ExpressionAttributeNames: { '#keys': 'keys', '#name': name, '#revoked': 'revoked_at' },
        ExpressionAttributeValues: { ':now': nowSeconds },
      },
      { changed: 'revoked', refused: 'already' },
    );
  }

  /**
   * A conditional change of the key `name`: `changed` when it applied; when its condition failed,
   * `refused` while the key exists (read fresh) and `unknown` when it does not. The cache goes either way.
   */
  private async changeKey<C extends string, R extends string>(
    name: string,
    update: ItemUpdate,
    answers: { readonly changed: C; readonly refused: R },
  ): Promise<C | R | 'unknown'> {
    const changed = await this.update(update);
    this.cached = undefined;
    if (changed) return answers.changed;
    const existing = (await this.list({ fresh: true })).find((r) => r.name === name);
    return existing ? answers.refused : 'unknown';
  }
}
