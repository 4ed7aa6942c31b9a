/**
 * PendingReplacements (issue 23) in the relay table: one item `REPLACE#pending`, one attribute
 * `r<round task id>` per replacement round under way (about 200 bytes; ./dynamodb-entry-attributes.ts).
 * The fleet watch reads them all in one GetItem each sweep, as it reads `INTENT#open`. A removal is
 * conditional: of overlapping sweeps, exactly one settles a round.
 */
import type { DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import type { PendingReplacement, PendingReplacements } from '../../domain/recovery/outbid-replacement';
import { keys } from '../../../contract/resources';
import { entryValues, removeEntry, setEntry } from './dynamodb-entry-attributes';
import { hasFields } from './dynamodb-stored-values';

const attributeOf = (taskId: string): string => `r${taskId.replace(/[^A-Za-z0-9-]/g, '')}`;

const isEntry = (value: unknown): value is PendingReplacement =>
  hasFields<PendingReplacement>(value, {
    task_id: 'string',
    parent_task_id: 'string',
    from_order_id: 'number',
    from_server_id: 'number',
    started_at: 'number',
  });

export class DynamoDbPendingReplacements implements PendingReplacements {
  public constructor(
    private readonly doc: DynamoDBDocumentClient,
    private readonly tableName: string,
  ) {}

  public async add(entry: PendingReplacement): Promise<void> {
    await setEntry(this.doc, this.tableName, keys.replacements(), attributeOf(entry.task_id), entry);
  }

  public async list(): Promise<readonly PendingReplacement[]> {
    return (await entryValues(this.doc, this.tableName, keys.replacements(), 'r')).filter(isEntry);
  }

  public async remove(taskId: string): Promise<boolean> {
    return removeEntry(this.doc, this.tableName, keys.replacements(), attributeOf(taskId), true);
  }
}
