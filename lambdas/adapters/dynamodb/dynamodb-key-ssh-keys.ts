/**
 * KeySshKeys in the relay table (issue 37 §2): one item per caller key, `KEYSSH#<name>`, holding its
 * public key line. Public keys are not secret; the item is read by PlaceOrder (one GetItem per
 * order that names no key) and written by the admin key routes.
 */
import { DeleteCommand, GetCommand, PutCommand, type DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import type { KeySshKeys } from '../../domain/access/order-access';
import { keys } from '../../../contract/resources';
import { batchGetItems } from './dynamodb-batch-get';

export class DynamoDbKeySshKeys implements KeySshKeys {
  public constructor(
    private readonly doc: DynamoDBDocumentClient,
    private readonly tableName: string,
  ) {}

  public async get(keyName: string): Promise<string | undefined> {
    const { Item } = await this.doc.send(
      new GetCommand({ TableName: this.tableName, Key: { pk: keys.keySshKey(keyName) }, ConsistentRead: true }),
    );
    return typeof Item?.ssh_public_key === 'string' ? Item.ssh_public_key : undefined;
  }

  /** Read in batches (BatchGetItem, 100 keys a call): GET /admin/keys lists up to 200 keys. */
  public async getMany(keyNames: readonly string[]): Promise<ReadonlyMap<string, string>> {
    const items = await batchGetItems(
      this.doc,
      this.tableName,
      keyNames.map(keys.keySshKey),
      'the SSH keys of the caller keys',
    );
    return new Map(
      items.flatMap((item) =>
        typeof item.key === 'string' && typeof item.ssh_public_key === 'string'
          ? [[item.key, item.ssh_public_key] as const]
          : [],
      ),
    );
  }

  public async put(keyName: string, line: string, now: number): Promise<void> {
    await this.doc.send(
      new PutCommand({
        TableName: this.tableName,
        Item: { pk: keys.keySshKey(keyName), key: keyName, ssh_public_key: line, updated_at: now },
      }),
    );
  }

  public async remove(keyName: string): Promise<void> {
    await this.doc.send(new DeleteCommand({ TableName: this.tableName, Key: { pk: keys.keySshKey(keyName) } }));
  }
}
