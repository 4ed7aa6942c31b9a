/**
 * The reference bundle of the bundle bench (issue 32, item 1): the floor any of the relay's SDK
 * functions stands on, a handler that imports only `@aws-sdk/lib-dynamodb`'s DocumentClient and
 * Powertools Logger and does one read. Built with the relay's bundling and loaded the same way in the
 * same run; every SDK function's module load is compared with its load (budget ≤ 1.5×).
 */
import { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { DynamoDBDocumentClient, GetCommand } from '@aws-sdk/lib-dynamodb';
import { Logger } from '@aws-lambda-powertools/logger';

const logger = new Logger();
const client = DynamoDBDocumentClient.from(new DynamoDBClient({}));

export const handler = async (): Promise<{ statusCode: number }> => {
  const { Item } = await client.send(new GetCommand({ TableName: process.env.TABLE_NAME, Key: { pk: 'REFERENCE' } }));
  logger.info('reference read', { found: Item !== undefined });
  return { statusCode: 200 };
};
