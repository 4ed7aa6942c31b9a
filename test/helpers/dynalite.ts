/**
 * An in-process dynalite (the real DynamoDB wire protocol) with the relay table, on an ephemeral
 * port: the local runtime's own `startLocalDynamo` plus a document client for assertions. Shared by
 * every test that needs a real table.
 */
import { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import { RELAY_TABLE } from '../../contract/resources';
import { startLocalDynamo } from '../../local/dynalite';

export interface LocalDynamo {
  /** e.g. http://127.0.0.1:54321 (usable as AWS_ENDPOINT_URL_DYNAMODB). */
  readonly endpoint: string;
  readonly doc: DynamoDBDocumentClient;
  readonly tableName: string;
  close(): Promise<void>;
}

let tableCounter = 0;

/** Starts dynalite on port 0 and creates the relay table (pk HASH, on-demand). */
export const startDynalite = async (options: { tableName?: string } = {}): Promise<LocalDynamo> => {
  tableCounter += 1;
  const local = await startLocalDynamo({
    tableName: options.tableName ?? `${RELAY_TABLE.logicalName}-${tableCounter}`,
  });
  const client = new DynamoDBClient({
    endpoint: local.endpoint,
    region: process.env.AWS_REGION ?? 'us-east-1',
    credentials: { accessKeyId: 'test', secretAccessKey: 'test' },
  });
  const doc = DynamoDBDocumentClient.from(client, { marshallOptions: { removeUndefinedValues: true } });
  return {
    endpoint: local.endpoint,
    doc,
    tableName: local.tableName,
    close: async () => {
      client.destroy();
      await local.close();
    },
  };
};
