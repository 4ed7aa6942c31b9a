/**
 * DynamoDB for `npm start`: dynalite (the real DynamoDB wire protocol, in-process, in memory) with
 * the relay table created from RELAY_TABLE, the same definition the CDK construct uses.
 */
import type { Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { createRequire } from 'node:module';
import { CreateTableCommand, DescribeTableCommand, DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { RELAY_TABLE } from '../contract/resources';

/** dynalite ships no type declarations; this is the part we use. */
type DynaliteFactory = (options?: {
  createTableMs?: number;
  deleteTableMs?: number;
  updateTableMs?: number;
  path?: string;
}) => Server;

export interface LocalDynamo {
  /** `http://127.0.0.1:<port>`, for AWS_ENDPOINT_URL_DYNAMODB. */
  readonly endpoint: string;
  readonly tableName: string;
  close(): Promise<void>;
}

export interface LocalDynamoOptions {
  /** 0 (default) picks a free port. */
  readonly port?: number;
  /** @default RELAY_TABLE.logicalName */
  readonly tableName?: string;
  /** Region for the admin client; dynalite does not care, the SDK needs one. */
  readonly region?: string;
}

/** Starts dynalite on 127.0.0.1 and creates the relay table (no TTL: dynalite has no UpdateTimeToLive). */
export const startLocalDynamo = async (options: LocalDynamoOptions = {}): Promise<LocalDynamo> => {
  // createRequire rather than `import`: dynalite has no types, and this keeps the cast in one place.
  const dynalite = createRequire(__filename)('dynalite') as DynaliteFactory;
  // Tables become ACTIVE at once instead of after dynalite's default 500 ms.
  const server = dynalite({ createTableMs: 0, deleteTableMs: 0, updateTableMs: 0 });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(options.port ?? 0, '127.0.0.1', () => {
      server.off('error', reject);
      resolve();
    });
  });
  const { port } = server.address() as AddressInfo;
  const endpoint = `http://127.0.0.1:${port}`;
  const tableName = options.tableName ?? RELAY_TABLE.logicalName;

  const close = async (): Promise<void> => {
    await new Promise<void>((resolve) => {
      server.close(() => resolve());
      // The SDK keeps connections alive; without this close() waits for them to idle out.
      server.closeAllConnections();
    });
  };

  const client = new DynamoDBClient({
    endpoint,
    region: options.region ?? process.env.AWS_REGION ?? 'us-east-1',
    credentials: { accessKeyId: 'local', secretAccessKey: 'local' },
  });
  try {
    await client.send(
      new CreateTableCommand({
        TableName: tableName,
        AttributeDefinitions: [
          { AttributeName: RELAY_TABLE.partitionKey, AttributeType: 'S' },
          { AttributeName: RELAY_TABLE.waitingIndex.partitionKey, AttributeType: 'S' },
          { AttributeName: RELAY_TABLE.waitingIndex.sortKey, AttributeType: 'S' },
        ],
        KeySchema: [{ AttributeName: RELAY_TABLE.partitionKey, KeyType: 'HASH' }],
        GlobalSecondaryIndexes: [
          {
            IndexName: RELAY_TABLE.waitingIndex.name,
            KeySchema: [
              { AttributeName: RELAY_TABLE.waitingIndex.partitionKey, KeyType: 'HASH' },
              { AttributeName: RELAY_TABLE.waitingIndex.sortKey, KeyType: 'RANGE' },
            ],
            Projection: { ProjectionType: 'ALL' },
          },
        ],
        BillingMode: 'PAY_PER_REQUEST',
      }),
    );
    // createTableMs 0 still goes through a tick in CREATING; wait until ACTIVE.
    for (let i = 0; i < 50; i += 1) {
      const { Table } = await client.send(new DescribeTableCommand({ TableName: tableName }));
      if (Table?.TableStatus === 'ACTIVE') break;
      await new Promise((r) => setTimeout(r, 10));
    }
  } catch (error) {
    await close();
    throw error;
  } finally {
    client.destroy();
  }
  return { endpoint, tableName, close };
};
