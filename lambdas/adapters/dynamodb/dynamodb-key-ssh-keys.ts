/**
 * KeySshKeys in the relay table (issue 37 §2): one item per caller key, `KEYSSH#<name>`, holding its
 * public key line. Public keys are not secret; the item is read by PlaceOrder (one GetItem per
 * order that names no key) and written by the admin key routes.
 */
import { DeleteCommand, GetCommand, PutCommand, type DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import type { KeySshKeys } from '../../domain/access/order-access';
import { keys } from '../../../contract/resources';

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
