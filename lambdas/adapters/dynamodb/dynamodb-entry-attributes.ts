/**
 * Items that hold one attribute per entry, read whole by one GetItem: `INTENT#open` (placement
 * intents), `REPLACE#pending` (replacement rounds), `HOSTS#index` (the host index) and the lease due
 * buckets. An entry is set or removed by one UpdateItem on its own attribute, so concurrent writers of
 * different entries never conflict.
 */
import { GetCommand, UpdateCommand, type DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import { updateItem } from './dynamodb-item-writes';

/** Sets the entry `attribute` of the item `pk` to `value` (creating the item if needed). */
export const setEntry = async (
  doc: DynamoDBDocumentClient,
  tableName: string,
  pk: string,
  attribute: string,
  value: unknown,
): Promise<void> => {
  await doc.send(
    new UpdateCommand({
      TableName: tableName,
      Key: { pk },
      UpdateExpression: 'SET #a = :entry',
      ExpressionAttributeNames: { '#a': attribute },
      ExpressionAttributeValues: { ':entry': value },
    }),
  );
};

/**
 * Removes the entry `attribute` of the item `pk`. With `ifPresent`, conditional on the entry: a
 * missing item is never created, and false tells that the entry was gone already (of concurrent
 * removals, exactly one answers true).
 */
export const removeEntry = async (
  doc: DynamoDBDocumentClient,
  tableName: string,
  pk: string,
  attribute: string,
  ifPresent: boolean,
): Promise<boolean> => {
  const removed = await updateItem(doc, tableName, pk, {
    UpdateExpression: 'REMOVE #a',
    ...(ifPresent ? { ConditionExpression: 'attribute_exists(#a)' } : {}),
    ExpressionAttributeNames: { '#a': attribute },
  });
  return removed !== undefined;
};

/** The values of the entries of the item `pk` whose attribute names start with `prefix` (read consistently). */
export const entryValues = async (
  doc: DynamoDBDocumentClient,
  tableName: string,
  pk: string,
  prefix: string,
): Promise<unknown[]> => {
  const { Item } = await doc.send(new GetCommand({ TableName: tableName, Key: { pk }, ConsistentRead: true }));
  return Object.entries(Item ?? {})
    .filter(([name]) => name.startsWith(prefix))
    .map(([, value]) => value);
};
