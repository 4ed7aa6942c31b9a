/**
 * The relay's host records in the relay table (issue 31 §2), two item families:
 *
 * - `HOST#<server_id>`: one item per host with its counters, samples and avoidance (the fields of
 *   HostRecord), a `version` for optimistic writes, and a TTL of HOST_RECORD_DAYS after its last outcome.
 * - `HOSTS#index`: one item with one attribute `h<server_id>` per host (`seen`, and while avoided
 *   `until`, `reason`, `by`): every search reads it once (GetItem) to leave avoided hosts out, and
 *   GET /webhook/hosts reads it to know which records to fetch (no Scan: nobody may read the table in bulk).
 */
import { GetCommand, PutCommand, type DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import { keys } from '../../../contract/resources';
import {
  DEFAULT_AVOID_POLICY,
  emptyHostRecord,
  HOST_RECORD_DAYS,
  withAvoidance,
  withOutcome,
  type AvoidPolicy,
  type HostAvoidance,
  type HostOutcome,
  type HostRecord,
  type HostRecords,
} from '../../domain/hosts/host-records';
import { isConditionalCheckFailed } from '../aws-clients';
import { avoidedInIndex, indexedHosts, readHostIndex } from './dynamodb-avoided-hosts';
import { batchGetItems } from './dynamodb-batch-get';
import { setEntry } from './dynamodb-entry-attributes';

/** Optimistic write attempts per outcome before giving up (concurrent outcomes on one host). */
const WRITE_ATTEMPTS = 5;

const attributeOf = (serverId: number): string => `h${serverId}`;

const numberOr = (value: unknown, fallback: number): number =>
  typeof value === 'number' && Number.isFinite(value) ? value : fallback;
const numbers = (value: unknown): number[] =>
  Array.isArray(value) ? value.filter((v): v is number => typeof v === 'number' && Number.isFinite(v)) : [];

/** A record from its item (tolerant: a missing field reads as none). */
export const readHostRecord = (serverId: number, item: Record<string, unknown>): HostRecord => {
  const refusals: Record<string, number> = {};
  if (item.refusals && typeof item.refusals === 'object')
    for (const [reason, n] of Object.entries(item.refusals as Record<string, unknown>))
      if (typeof n === 'number') refusals[reason] = n;
  const avoided = item.avoided as Partial<HostAvoidance> | undefined;
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
    failures: numbers(item.failures),
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

export class DynamoDbHostRecords implements HostRecords {
  public constructor(
    private readonly doc: DynamoDBDocumentClient,
    private readonly tableName: string,
    private readonly policy: AvoidPolicy = DEFAULT_AVOID_POLICY,
  ) {}

  public async record(serverId: number, outcome: HostOutcome, nowMs: number): Promise<HostAvoidance | undefined> {
    let avoided: HostAvoidance | undefined;
    await this.update(serverId, nowMs, (current) => {
      const next = withOutcome(current, outcome, nowMs, this.policy);
      avoided = next.avoided;
      return next.record;
    });
    return avoided;
  }

  public async setAvoidance(serverId: number, avoided: HostAvoidance | undefined, nowMs: number): Promise<HostRecord> {
    return this.update(serverId, nowMs, (current) => withAvoidance(current, avoided, nowMs));
  }

  /** Read, change, write back conditional on the version read (retried when another write came between). */
  private async update(
    serverId: number,
    nowMs: number,
    change: (record: HostRecord) => HostRecord,
  ): Promise<HostRecord> {
    const pk = keys.host(serverId);
    for (let attempt = 1; ; attempt += 1) {
      const answer = await this.doc.send(
        new GetCommand({ TableName: this.tableName, Key: { pk }, ConsistentRead: true }),
      );
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
      await this.index(record);
      return record;
    }
  }

  /** The host's line in the index: when it was seen and, while avoided, until when and why. */
  private async index(record: HostRecord): Promise<void> {
    const entry = {
      seen: record.updated_at,
      ...(record.avoided ? { until: record.avoided.until, reason: record.avoided.reason, by: record.avoided.by } : {}),
    };
    await setEntry(this.doc, this.tableName, keys.hostIndex(), attributeOf(record.server_id), entry);
  }

  public async avoided(nowMs: number): Promise<ReadonlySet<number>> {
    return avoidedInIndex(await readHostIndex(this.doc, this.tableName), nowMs);
  }

  public async list(): Promise<HostRecord[]> {
    const ids = indexedHosts(await readHostIndex(this.doc, this.tableName));
    const records: HostRecord[] = [];
    const byKey = new Map(ids.map((id) => [keys.host(id), id]));
    const pks = ids.map((id) => keys.host(id));
    for (const item of await batchGetItems(this.doc, this.tableName, pks, 'host records')) {
      const id = byKey.get(String(item.pk));
      if (id !== undefined) records.push(readHostRecord(id, item));
    }
    return records;
  }
}
