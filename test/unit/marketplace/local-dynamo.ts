/** In-process dynalite with a `pk`-keyed table, for the DynamoDB adapter tests of this folder. */
import type { Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { CreateTableCommand, DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';

type DynaliteFactory = (options: { createTableMs: number }) => Server;

export interface TestDynamo {
  readonly endpoint: string;
  readonly doc: DynamoDBDocumentClient;
  createTable(name: string): Promise<void>;
  close(): Promise<void>;
}

export const startTestDynamo = async (): Promise<TestDynamo> => {
  // eslint-disable-next-line @typescript-eslint/no-require-imports
  const dynalite = require('dynalite') as DynaliteFactory;
  const server = dynalite({ createTableMs: 0 });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const endpoint = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  const client = new DynamoDBClient({ endpoint, region: 'us-east-1', credentials: { accessKeyId: 'test', secretAccessKey: 'test' } });
  const doc = DynamoDBDocumentClient.from(client, { marshallOptions: { removeUndefinedValues: true } });
  return {
    endpoint,
    doc,
    createTable: async (name) => {
      await client.send(new CreateTableCommand({
        TableName: name,
        AttributeDefinitions: [{ AttributeName: 'pk', AttributeType: 'S' }],
        KeySchema: [{ AttributeName: 'pk', KeyType: 'HASH' }],
        BillingMode: 'PAY_PER_REQUEST',
      }));
      // createTableMs 0 still passes through CREATING for a tick.
      await new Promise((r) => setTimeout(r, 20));
    },
    close: async () => {
      client.destroy();
      await new Promise<void>((resolve) => {
        server.close(() => resolve());
        (server as Server & { closeAllConnections?: () => void }).closeAllConnections?.();
      });
    },
  };
};
