/**
 * An in-process dynalite (the real DynamoDB wire protocol) with the relay table created from
 * lib/relay-resources.ts, on an ephemeral port. Shared by every test that needs a real table.
 */
import type { AddressInfo, Server } from 'node:net';
import { CreateTableCommand, DescribeTableCommand, DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import { RELAY_TABLE } from '../../lib/relay-resources';

type DynaliteFactory = (options: { createTableMs?: number; deleteTableMs?: number; updateTableMs?: number }) => Server;
// dynalite ships no types; it is CommonJS.
// eslint-disable-next-line @typescript-eslint/no-require-imports
const dynalite = require('dynalite') as DynaliteFactory;

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
  const server = dynalite({ createTableMs: 0, deleteTableMs: 0, updateTableMs: 0 });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => resolve());
  });
  const { port } = server.address() as AddressInfo;
  const endpoint = `http://127.0.0.1:${port}`;
  const client = new DynamoDBClient({
    endpoint,
    region: process.env.AWS_REGION ?? 'us-east-1',
    credentials: { accessKeyId: 'test', secretAccessKey: 'test' },
  });
  const doc = DynamoDBDocumentClient.from(client, { marshallOptions: { removeUndefinedValues: true } });
  tableCounter += 1;
  const tableName = options.tableName ?? `${RELAY_TABLE.logicalName}-${tableCounter}`;
  await client.send(new CreateTableCommand({
    TableName: tableName,
    AttributeDefinitions: [{ AttributeName: RELAY_TABLE.partitionKey, AttributeType: 'S' }],
    KeySchema: [{ AttributeName: RELAY_TABLE.partitionKey, KeyType: 'HASH' }],
    BillingMode: 'PAY_PER_REQUEST',
  }));
  // dynalite flips the table to ACTIVE on a timer, even with createTableMs 0.
  for (let i = 0; i < 100; i += 1) {
    const { Table } = await client.send(new DescribeTableCommand({ TableName: tableName }));
    if (Table?.TableStatus === 'ACTIVE') break;
    await new Promise((resolve) => setTimeout(resolve, 5));
  }
  return {
    endpoint,
    doc,
    tableName,
    close: async () => {
      client.destroy();
      await new Promise<void>((resolve, reject) => server.close((error) => (error ? reject(error) : resolve())));
    },
  };
};
