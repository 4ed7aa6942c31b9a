/**
 * The one read every search makes of the host records (issue 31 §2): the `HOSTS#index` item's avoided
 * hosts. A module of its own so FindServer and the fleet watch's sweep bundle only this, not the whole
 * store (lambdas/adapters/dynamodb/dynamodb-host-records.ts).
 */
import { GetCommand, type DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import { keys } from '../../../contract/resources';
import type { HostRecords } from '../../domain/hosts/host-records';

/** The index attribute of a host: `h<server_id>`. */
export const INDEX_ATTRIBUTE = /^h\d+$/;

/** The server ids the index names (every host with a record). */
export const indexedHosts = (item: Record<string, unknown>): number[] =>
  Object.keys(item)
    .filter((name) => INDEX_ATTRIBUTE.test(name))
    .map((name) => Number(name.slice(1)));

/** The server ids the index avoids at `nowMs`. */
export const avoidedInIndex = (item: Record<string, unknown>, nowMs: number): Set<number> => {
  const ids = new Set<number>();
  for (const [name, value] of Object.entries(item)) {
    if (!INDEX_ATTRIBUTE.test(name) || !value || typeof value !== 'object') continue;
    const until = (value as { until?: unknown }).until;
    if (typeof until === 'number' && until * 1000 > nowMs) ids.add(Number(name.slice(1)));
  }
  return ids;
};

export const readHostIndex = async (doc: DynamoDBDocumentClient, tableName: string): Promise<Record<string, unknown>> =>
  (await doc.send(new GetCommand({ TableName: tableName, Key: { pk: keys.hostIndex() } }))).Item ?? {};

export class DynamoDbAvoidedHosts implements Pick<HostRecords, 'avoided'> {
  public constructor(
    private readonly doc: DynamoDBDocumentClient,
    private readonly tableName: string,
  ) {}

  public async avoided(nowMs: number): Promise<ReadonlySet<number>> {
    return avoidedInIndex(await readHostIndex(this.doc, this.tableName), nowMs);
  }
}
