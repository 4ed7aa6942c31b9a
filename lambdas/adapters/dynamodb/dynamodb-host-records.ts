/**
 * The relay's host records in the relay table (issue 31 §2), two item families:
 *
 * - `HOST#<server_id>`: one item per host with its counters, samples and avoidances (the fields of
 *   HostRecord), a `version` for optimistic writes, and a TTL of HOST_RECORD_DAYS after its last outcome.
 * - `HOSTS#index`: one item with one attribute `h<server_id>` per host (./dynamodb-avoided-hosts.ts):
 *   every search reads it once (GetItem) to leave avoided hosts out, and GET /webhook/hosts reads it to
 *   page the records (no Scan: nobody may read the table in bulk).
 *
 * The index stays under 100 KB (issue 38 §5): each write that sets a host's line drops the lines whose
 * record has expired (seen more than HOST_RECORD_DAYS ago), the oldest lines beyond MAX_INDEX_LINES,
 * the per-key avoidances that ended, and the soonest-ending beyond MAX_INDEX_KEY_AVOIDANCES.
 */
import { GetCommand, PutCommand, UpdateCommand, type DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import { keys } from '../../../contract/resources';
import {
  DEFAULT_AVOID_POLICY,
  emptyHostRecord,
  hostIndexPage,
  HOST_RECORD_DAYS,
  withAvoidance,
  withOutcome,
  type AvoidPolicy,
  type HostAvoidance,
  type HostAvoidances,
  type HostCursor,
  type HostFailure,
  type HostIndexLine,
  type HostOutcome,
  type HostRecord,
  type HostRecords,
  type HostViewer,
  type KeyHostCounts,
  type StartedAvoidance,
} from '../../domain/hosts/host-records';
import { DEFAULT_KEY_NAME } from '../../domain/teams/caller-keys';
import { isConditionalCheckFailed } from '../aws-clients';
import { avoidancesInIndex, DynamoDbAvoidedHosts, indexLines, readHostIndex } from './dynamodb-avoided-hosts';
import { batchGetItems } from './dynamodb-batch-get';
import { updateItem } from './dynamodb-item-writes';

/** Optimistic write attempts per outcome before giving up (concurrent outcomes on one host). */
const WRITE_ATTEMPTS = 5;

/** The bound of the index item, with room under DynamoDB's 400 KB. */
export const INDEX_MAX_BYTES = 100_000;
/** Per-key avoidances one index line carries (the latest ending): two keys failing makes it relay-wide anyway. */
export const LINE_KEY_AVOIDANCES = 2;
/**
 * The most bytes a line without per-key avoidances takes (DynamoDB's item size rules): its name
 * `h` + 15 digits (16), the map (3), `seen` and `until` (name, a 10-digit number: 6, and 1 each:
 * 11 and 12), and the empty `keys` map (4 + 3 + 1).
 */
export const INDEX_LINE_MAX_BYTES = 16 + 3 + 11 + 12 + 8;
/** The most bytes one per-key avoidance adds: a key name (64) and its epoch seconds (6), and 1. */
export const INDEX_KEY_AVOIDANCE_MAX_BYTES = 64 + 6 + 1;
/** Per-key avoidances the whole index holds (the soonest ending beyond it are dropped: they end early). */
export const MAX_INDEX_KEY_AVOIDANCES = 200;
/** Lines the index holds (the oldest seen beyond it are dropped), so that the item stays under INDEX_MAX_BYTES. */
export const MAX_INDEX_LINES = Math.floor(
  (INDEX_MAX_BYTES - 'pk'.length - keys.hostIndex().length - MAX_INDEX_KEY_AVOIDANCES * INDEX_KEY_AVOIDANCE_MAX_BYTES) /
    INDEX_LINE_MAX_BYTES,
);
/** Attributes one pruning UpdateItem removes (its expression stays far under DynamoDB's 4 KB). */
const PRUNE_CHUNK = 100;

const attributeOf = (serverId: number): string => `h${serverId}`;

const numberOr = (value: unknown, fallback: number): number =>
  typeof value === 'number' && Number.isFinite(value) ? value : fallback;
const numbers = (value: unknown): number[] =>
  Array.isArray(value) ? value.filter((v): v is number => typeof v === 'number' && Number.isFinite(v)) : [];

const FAILED_KINDS = ['readiness_timeout', 'ssh_never_answered', 'login_refused'] as const;

/** Failed starts as stored; a bare number (written before issue 38) reads as the default key's refused login. */
const failuresOf = (value: unknown): HostFailure[] =>
  Array.isArray(value)
    ? value.flatMap((f): HostFailure[] => {
        if (typeof f === 'number') return [{ at: f, key: DEFAULT_KEY_NAME, kind: 'login_refused' }];
        const v = f as Partial<HostFailure> | undefined;
        if (!v || typeof v.at !== 'number' || typeof v.key !== 'string') return [];
        const kind = FAILED_KINDS.find((k) => k === v.kind) ?? 'login_refused';
        return [{ at: v.at, key: v.key, kind }];
      })
    : [];

/** A record from its item (tolerant: a missing field reads as none). */
export const readHostRecord = (serverId: number, item: Record<string, unknown>): HostRecord => {
  const refusals: Record<string, number> = {};
  if (item.refusals && typeof item.refusals === 'object')
    for (const [reason, n] of Object.entries(item.refusals as Record<string, unknown>))
      if (typeof n === 'number') refusals[reason] = n;
  const avoided = item.avoided as Partial<HostAvoidance> | undefined;
  const avoidedFor: Record<string, number> = {};
  if (item.avoided_for && typeof item.avoided_for === 'object')
    for (const [key, until] of Object.entries(item.avoided_for as Record<string, unknown>))
      if (typeof until === 'number') avoidedFor[key] = until;
  const byKey: Record<string, KeyHostCounts> = {};
  if (item.by_key && typeof item.by_key === 'object')
    for (const [key, c] of Object.entries(item.by_key as Record<string, Record<string, unknown> | undefined>))
      if (c && typeof c === 'object')
        byKey[key] = {
          placed: numberOr(c.placed, 0),
          ready: numberOr(c.ready, 0),
          readiness_timeouts: numberOr(c.readiness_timeouts, 0),
          ssh_never_answered: numberOr(c.ssh_never_answered, 0),
          login_refused: numberOr(c.login_refused, 0),
          outbids: numberOr(c.outbids, 0),
          updated_at: numberOr(c.updated_at, 0),
        };
  return {
    server_id: serverId,
    placed: numberOr(item.placed, 0),
    ready: numberOr(item.ready, 0),
    readiness_timeouts: numberOr(item.readiness_timeouts, 0),
    ssh_never_answered: numberOr(item.ssh_never_answered, 0),
    login_refused: numberOr(item.login_refused, 0),
    refusals,
    outbids: numberOr(item.outbids, 0),
    ready_seconds: numbers(item.ready_seconds),
    failures: failuresOf(item.failures),
    ...(Object.keys(avoidedFor).length ? { avoided_for: avoidedFor } : {}),
    ...(Object.keys(byKey).length ? { by_key: byKey } : {}),
    ...(avoided && typeof avoided.until === 'number'
      ? {
          avoided: {
            until: avoided.until,
            reason: String(avoided.reason ?? ''),
            by: avoided.by === 'operator' ? 'operator' : 'auto',
          },
        }
      : {}),
    updated_at: numberOr(item.updated_at, 0),
  };
};

/** The index line of a record: when seen and, while avoided, until when (relay-wide; for LINE_KEY_AVOIDANCES keys). */
export const indexLineOf = (record: HostRecord): Record<string, unknown> => {
  const forKeys = Object.entries(record.avoided_for ?? {})
    .sort(([, a], [, b]) => b - a)
    .slice(0, LINE_KEY_AVOIDANCES);
  return {
    seen: record.updated_at,
    ...(record.avoided ? { until: record.avoided.until } : {}),
    ...(forKeys.length ? { keys: Object.fromEntries(forKeys) } : {}),
  };
};

/**
 * What the index should drop at `nowSeconds`: lines whose record expired, the oldest lines beyond
 * `maxLines`; per-key avoidances that ended, and the soonest ending beyond `maxKeyAvoidances`.
 */
export const indexPruning = (
  lines: readonly HostIndexLine[],
  nowSeconds: number,
  maxLines: number = MAX_INDEX_LINES,
  maxKeyAvoidances: number = MAX_INDEX_KEY_AVOIDANCES,
): { readonly lines: HostIndexLine[]; readonly keys: { readonly line: HostIndexLine; readonly key: string }[] } => {
  const expiredBefore = nowSeconds - HOST_RECORD_DAYS * 86_400;
  const byAge = [...lines].sort((a, b) => b.seen - a.seen || b.server_id - a.server_id);
  const kept = byAge.filter((l) => l.seen > expiredBefore).slice(0, maxLines);
  const keptIds = new Set(kept.map((l) => l.server_id));
  const droppedLines = lines.filter((l) => !keptIds.has(l.server_id));
  const entries = kept.flatMap((line) => Object.entries(line.keys ?? {}).map(([key, until]) => ({ line, key, until })));
  const running = entries.filter((e) => e.until > nowSeconds).sort((a, b) => b.until - a.until);
  const keptEntries = new Set(running.slice(0, maxKeyAvoidances));
  const droppedKeys = entries.filter((e) => !keptEntries.has(e)).map(({ line, key }) => ({ line, key }));
  return { lines: droppedLines, keys: droppedKeys };
};

export class DynamoDbHostRecords implements HostRecords {
  private readonly avoidedHosts: DynamoDbAvoidedHosts;

  public constructor(
    private readonly doc: DynamoDBDocumentClient,
    private readonly tableName: string,
    private readonly policy: AvoidPolicy = DEFAULT_AVOID_POLICY,
    /** The index's bounds (tests make them small). */
    private readonly bounds: { readonly maxLines: number; readonly maxKeyAvoidances: number } = {
      maxLines: MAX_INDEX_LINES,
      maxKeyAvoidances: MAX_INDEX_KEY_AVOIDANCES,
    },
  ) {
    this.avoidedHosts = new DynamoDbAvoidedHosts(doc, tableName);
  }

  public async record(
    serverId: number,
    outcome: HostOutcome,
    nowMs: number,
    key: string = DEFAULT_KEY_NAME,
  ): Promise<StartedAvoidance | undefined> {
    let avoided: StartedAvoidance | undefined;
    await this.update(serverId, nowMs, (current) => {
      const next = withOutcome(current, outcome, nowMs, this.policy, key);
      avoided = next.avoided;
      return next.record;
    });
    return avoided;
  }

  public async setAvoidance(serverId: number, avoided: HostAvoidance, nowMs: number): Promise<HostRecord> {
    return (await this.update(serverId, nowMs, (current) => withAvoidance(current, avoided, nowMs))) as HostRecord;
  }

  public async clear(serverId: number, nowMs: number): Promise<HostRecord | undefined> {
    return this.update(serverId, nowMs, (current) => withAvoidance(current, undefined, nowMs), { ifRecorded: true });
  }

  /**
   * Read, change, write back conditional on the version read (retried when another write came
   * between). With `ifRecorded`, a host without a record is left without one (undefined).
   */
  private async update(
    serverId: number,
    nowMs: number,
    change: (record: HostRecord) => HostRecord,
    options: { readonly ifRecorded?: boolean } = {},
  ): Promise<HostRecord | undefined> {
    const pk = keys.host(serverId);
    for (let attempt = 1; ; attempt += 1) {
      const answer = await this.doc.send(
        new GetCommand({ TableName: this.tableName, Key: { pk }, ConsistentRead: true }),
      );
      if (!answer.Item && options.ifRecorded) return undefined;
      const version = numberOr(answer.Item?.version, 0);
      const current = answer.Item
        ? readHostRecord(serverId, answer.Item)
        : emptyHostRecord(serverId, Math.floor(nowMs / 1000));
      const record = change(current);
      try {
        await this.doc.send(
          new PutCommand({
            TableName: this.tableName,
            Item: {
              ...record,
              pk,
              version: version + 1,
              ttl: record.updated_at + HOST_RECORD_DAYS * 86_400,
            },
            ConditionExpression: answer.Item ? 'version = :v' : 'attribute_not_exists(pk)',
            ...(answer.Item ? { ExpressionAttributeValues: { ':v': version } } : {}),
          }),
        );
      } catch (error) {
        if (isConditionalCheckFailed(error) && attempt < WRITE_ATTEMPTS) continue;
        throw error;
      }
      await this.index([record], nowMs);
      return record;
    }
  }

  /**
   * Sets the records' lines in the index (one UpdateItem), then drops what the bounds say must go
   * (pruneIndex). Several records at once: a migration or a test that builds a year of hosts.
   */
  public async index(records: readonly HostRecord[], nowMs: number): Promise<void> {
    const names: Record<string, string> = {};
    const values: Record<string, unknown> = {};
    const sets = records.map((record, i) => {
      names[`#a${i}`] = attributeOf(record.server_id);
      values[`:e${i}`] = indexLineOf(record);
      return `#a${i} = :e${i}`;
    });
    const answer = await this.doc.send(
      new UpdateCommand({
        TableName: this.tableName,
        Key: { pk: keys.hostIndex() },
        UpdateExpression: `SET ${sets.join(', ')}`,
        ExpressionAttributeNames: names,
        ExpressionAttributeValues: values,
        // No read units: the item as written tells what to prune.
        ReturnValues: 'ALL_NEW',
      }),
    );
    await this.pruneIndex(answer.Attributes ?? {}, nowMs);
  }

  /**
   * Removes the index's expired and surplus lines and per-key avoidances, PRUNE_CHUNK attributes per
   * UpdateItem, each conditional on the line's `seen` being the one read: a line a concurrent write
   * refreshed stays (that chunk is left to the next write).
   */
  private async pruneIndex(item: Record<string, unknown>, nowMs: number): Promise<void> {
    const drop = indexPruning(
      indexLines(item),
      Math.floor(nowMs / 1000),
      this.bounds.maxLines,
      this.bounds.maxKeyAvoidances,
    );
    const paths = [
      ...drop.lines.map((line) => ({ line, key: undefined as string | undefined })),
      ...drop.keys.filter((k) => !drop.lines.includes(k.line)),
    ];
    for (let start = 0; start < paths.length; start += PRUNE_CHUNK) {
      const names: Record<string, string> = {};
      const values: Record<string, unknown> = {};
      const removes: string[] = [];
      const conditions: string[] = [];
      paths.slice(start, start + PRUNE_CHUNK).forEach(({ line, key }, i) => {
        names[`#l${i}`] = attributeOf(line.server_id);
        names['#seen'] = 'seen';
        values[`:s${i}`] = line.seen;
        conditions.push(`#l${i}.#seen = :s${i}`);
        if (key === undefined) removes.push(`#l${i}`);
        else {
          names['#keys'] = 'keys';
          names[`#k${i}`] = key;
          removes.push(`#l${i}.#keys.#k${i}`);
        }
      });
      await updateItem(this.doc, this.tableName, keys.hostIndex(), {
        UpdateExpression: `REMOVE ${removes.join(', ')}`,
        ConditionExpression: conditions.join(' AND '),
        ExpressionAttributeNames: names,
        ExpressionAttributeValues: values,
      });
    }
  }

  public async avoided(nowMs: number, key?: string): Promise<ReadonlySet<number>> {
    return this.avoidedHosts.avoided(nowMs, key);
  }

  public async avoidances(nowMs: number): Promise<HostAvoidances> {
    return avoidancesInIndex(await readHostIndex(this.doc, this.tableName), nowMs);
  }

  public async page(
    viewer: HostViewer,
    nowMs: number,
    limit: number,
    cursor?: HostCursor,
  ): Promise<{ readonly records: HostRecord[]; readonly next?: HostCursor; readonly avoided: number }> {
    const page = hostIndexPage(indexLines(await readHostIndex(this.doc, this.tableName)), viewer, nowMs, limit, cursor);
    const byKey = new Map(page.ids.map((id) => [keys.host(id), id]));
    const found = new Map<number, HostRecord>();
    for (const item of await batchGetItems(this.doc, this.tableName, [...byKey.keys()], 'host records')) {
      const id = byKey.get(String(item.pk));
      if (id !== undefined) found.set(id, readHostRecord(id, item));
    }
    const records = page.ids.flatMap((id) => {
      const record = found.get(id);
      return record ? [record] : [];
    });
    return { records, ...(page.next ? { next: page.next } : {}), avoided: page.avoided };
  }
}
