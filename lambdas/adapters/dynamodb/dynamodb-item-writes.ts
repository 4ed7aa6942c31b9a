/**
 * Writes of one item by its key (`pk`), as every store in the relay table makes them. A conditional
 * write either lands (its answer) or finds its condition false (undefined): which of the two, each
 * store decides for itself; any other error is thrown. No request is changed on the way: the table,
 * the key and what the caller gives are sent as they are.
 */
import {
  UpdateCommand,
  type DynamoDBDocumentClient,
  type UpdateCommandInput,
  type UpdateCommandOutput,
} from '@aws-sdk/lib-dynamodb';
import { isConditionalCheckFailed } from '../aws-clients';

/** An UpdateItem without its table and key: its expressions, names, values and ReturnValues. */
export type ItemUpdate = Omit<UpdateCommandInput, 'TableName' | 'Key'>;

/** The answer of a conditional write, or undefined when its condition failed; any other error is thrown. */
export const unlessConditionFailed = async <T>(write: Promise<T>): Promise<T | undefined> => {
  try {
    return await write;
  } catch (error) {
    if (isConditionalCheckFailed(error)) return undefined;
    throw error;
  }
};

/** UpdateItem of the item `pk`: its answer, or undefined when its condition failed. */
export const updateItem = (
  doc: DynamoDBDocumentClient,
  tableName: string,
  pk: string,
  update: ItemUpdate,
): Promise<UpdateCommandOutput | undefined> =>
  unlessConditionFailed(doc.send(new UpdateCommand({ TableName: tableName, Key: { pk }, ...update })));
