/**
 * The host index `HOSTS#index` (issue 31 §2, bounded by issue 38 §5): one attribute `h<server_id>`
 * per host with a record, `{seen, until?, keys?}` (when it was last seen; while avoided relay-wide,
 * until when; the keys it is avoided for alone, key → until). Every search reads it once (GetItem) to
 * leave avoided hosts out, and GET /webhook/hosts reads it to page the records (no Scan: nobody may
 * read the table in bulk). A module of its own so FindServer and the fleet watch's sweep bundle only
 * this, not the whole store (lambdas/adapters/dynamodb/dynamodb-host-records.ts), which keeps it bounded.
 */
import { GetCommand, type DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import { keys } from '../../../contract/resources';
import { avoidedFor, type HostAvoidances, type HostIndexLine, type HostRecords } from '../../domain/hosts/host-records';
import { DEFAULT_KEY_NAME } from '../../domain/teams/caller-keys';

/** The index attribute of a host: `h<server_id>`. */
export const INDEX_ATTRIBUTE = /^h\d+$/;

/** The lines of the index item (a malformed one is left out). */
export const indexLines = (item: Record<string, unknown>): HostIndexLine[] => {
  const lines: HostIndexLine[] = [];
  for (const [name, value] of Object.entries(item)) {
    if (!INDEX_ATTRIBUTE.test(name) || !value || typeof value !== 'object') continue;
    const v = value as { seen?: unknown; until?: unknown; keys?: unknown };
    const keyUntil: Record<string, number> = {};
    if (v.keys && typeof v.keys === 'object')
      for (const [key, until] of Object.entries(v.keys as Record<string, unknown>))
        if (typeof until === 'number') keyUntil[key] = until;
    lines.push({
      server_id: Number(name.slice(1)),
      seen: typeof v.seen === 'number' ? v.seen : 0,
      ...(typeof v.until === 'number' ? { until: v.until } : {}),
      ...(Object.keys(keyUntil).length ? { keys: keyUntil } : {}),
    });
  }
  return lines;
};

/** The avoidances the index holds at `nowMs`: relay-wide, and per key. */
export const avoidancesInIndex = (item: Record<string, unknown>, nowMs: number): HostAvoidances => {
  const relay = new Set<number>();
  const byKey = new Map<string, Set<number>>();
  for (const line of indexLines(item)) {
    if ((line.until ?? 0) * 1000 > nowMs) relay.add(line.server_id);
    for (const [key, until] of Object.entries(line.keys ?? {})) {
      if (until * 1000 <= nowMs) continue;
      const ids = byKey.get(key) ?? new Set<number>();
      ids.add(line.server_id);
      byKey.set(key, ids);
    }
  }
  return { relay, byKey };
};

export const readHostIndex = async (doc: DynamoDBDocumentClient, tableName: string): Promise<Record<string, unknown>> =>
  (await doc.send(new GetCommand({ TableName: tableName, Key: { pk: keys.hostIndex() } }))).Item ?? {};

export class DynamoDbAvoidedHosts implements Pick<HostRecords, 'avoided' | 'avoidances'> {
  public constructor(
    private readonly doc: DynamoDBDocumentClient,
    private readonly tableName: string,
  ) {}

  public async avoidances(nowMs: number): Promise<HostAvoidances> {
    return avoidancesInIndex(await readHostIndex(this.doc, this.tableName), nowMs);
  }

  public async avoided(nowMs: number, key: string = DEFAULT_KEY_NAME): Promise<ReadonlySet<number>> {
    return avoidedFor(await this.avoidances(nowMs), key);
  }
}
