/**
 * Writes of one item by its key (`pk`), as the stores in the relay table make them. A conditional
 * write either lands (its answer) or finds its condition false (undefined), and what a failed
 * condition means is each store's own business; any other error is thrown. The request is sent as
 * given: the table, the key and the caller's expressions, names and values.
 */
import {
  DeleteCommand,
  PutCommand,
  UpdateCommand,
  type DeleteCommandInput,
  type DynamoDBDocumentClient,
  type PutCommandInput,
  type UpdateCommandInput,
} from '@aws-sdk/lib-dynamodb';
import { isConditionalCheckFailed } from '../aws-clients';

/** An UpdateItem without its table and key: its expressions, names, values and ReturnValues. */
export type ItemUpdate = Omit<UpdateCommandInput, 'TableName' | 'Key'>;

/** A DeleteItem without its table and key: its condition, names, values and ReturnValues. */
export type ItemDelete = Omit<DeleteCommandInput, 'TableName' | 'Key'>;

/** A PutItem without its table and item: its condition, names and values. */
export type ItemPut = Omit<PutCommandInput, 'TableName' | 'Item'>;

/** The answer of a conditional write, or undefined when its condition failed; any other error is thrown. */
export const unlessConditionFailed = async <T>(write: Promise<T>): Promise<T | undefined> => {
  try {
    return await write;
  } catch (error) {
    if (isConditionalCheckFailed(error)) return undefined;
    throw error;
  }
};

/** UpdateItem of the item `pk`: its answer (UpdateCommandOutput), or undefined when its condition failed. */
export const updateItem = (doc: DynamoDBDocumentClient, tableName: string, pk: string, update: ItemUpdate) =>
  unlessConditionFailed(doc.send(new UpdateCommand({ TableName: tableName, Key: { pk }, ...update })));

/** PutItem of `item` (its `pk` among its attributes): its answer (PutCommandOutput), or undefined when its condition failed. */
export const putItem = (doc: DynamoDBDocumentClient, tableName: string, item: Record<string, unknown>, put: ItemPut) =>
  unlessConditionFailed(doc.send(new PutCommand({ TableName: tableName, Item: item, ...put })));

/** DeleteItem of the item `pk`: its answer (DeleteCommandOutput), or undefined when its condition failed. */
export const deleteItem = (doc: DynamoDBDocumentClient, tableName: string, pk: string, conditional: ItemDelete) =>
  unlessConditionFailed(doc.send(new DeleteCommand({ TableName: tableName, Key: { pk }, ...conditional })));
