/**
 * DynamoDB for `npm start`: dynalite (the real DynamoDB wire protocol, in-process) with the relay
 * table created from RELAY_TABLE, the same definition the CDK construct uses. In memory (tests), or
 * in a LevelDB folder (`path`: dynalite's own store, classic-level) that `npm start` keeps across
 * restarts.
 */
import type { IncomingMessage, RequestListener, Server, ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { createRequire } from 'node:module';
import * as nodePath from 'node:path';
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
  /**
   * Holds every write that arrives from now on and resolves, once the writes already in progress
   * have answered, with the function that lets them through again. Between the two the table cannot
   * change: what is read then is the table at one instant (the state snapshot, local/state-snapshot.ts).
   */
  holdWrites(): Promise<() => void>;
  close(): Promise<void>;
}

export interface LocalDynamoOptions {
  /** 0 (default) picks a free port. */
  readonly port?: number;
  /** @default RELAY_TABLE.logicalName */
  readonly tableName?: string;
  /** Region for the admin client; dynalite does not care, the SDK needs one. */
  readonly region?: string;
  /** A LevelDB folder to keep the table in. @default - memory */
  readonly path?: string;
  /** Create the table when the store has none; false only opens what is there (a snapshot's source). @default true */
  readonly createTable?: boolean;
}

/** Operations that never change the store; every other one is held by `holdWrites`. */
const READ_OPERATIONS = new Set([
  'GetItem',
  'BatchGetItem',
  'Query',
  'Scan',
  'DescribeTable',
  'ListTables',
  'DescribeTimeToLive',
  'ListTagsOfResource',
  'DescribeLimits',
]);

/**
 * Puts a gate in front of dynalite's request listener: reads always pass, writes pass unless held.
 * A held write waits before dynalite reads its body, so it has neither landed nor answered.
 */
const gateWrites = (server: Server): LocalDynamo['holdWrites'] => {
  const listeners = server.listeners('request') as RequestListener[];
  server.removeAllListeners('request');
  const handle = (req: IncomingMessage, res: ServerResponse) => {
    for (const listener of listeners) listener(req, res);
  };
  let holders = 0;
  let inFlight = 0;
  const waiting: (() => void)[] = [];
  let drained: (() => void) | undefined;
  const run = (req: IncomingMessage, res: ServerResponse) => {
    inFlight += 1;
    res.once('close', () => {
      inFlight -= 1;
      if (inFlight === 0) drained?.();
    });
    handle(req, res);
  };
  server.on('request', (req: IncomingMessage, res: ServerResponse) => {
    const operation = String(req.headers['x-amz-target'] ?? '').split('.')[1] ?? '';
    if (READ_OPERATIONS.has(operation)) return handle(req, res);
    if (holders > 0) waiting.push(() => run(req, res));
    else run(req, res);
  });
  return async () => {
    holders += 1;
    if (inFlight > 0) await new Promise<void>((resolve) => (drained = resolve));
    drained = undefined;
    let released = false;
    return () => {
      if (released) return;
      released = true;
      holders -= 1;
      if (holders === 0) for (const next of waiting.splice(0)) next();
    };
  };
};

/** Another process holds the LevelDB folder (another `npm start` on the same STATE_DIR). */
export class StateInUseError extends Error {
  public constructor(folder: string) {
    super(`the state in ${folder} is in use by another process (another npm start with the same STATE_DIR?)`);
    this.name = 'StateInUseError';
  }
}

/** The part of `level` (dynalite's LevelDB binding) used to test the folder's lock. */
type LevelClass = new (location: string) => { open(): Promise<void>; close(): Promise<void> };

/**
 * Opens and closes the folder once before dynalite does: dynalite opens it lazily, so a folder
 * locked by another process would otherwise surface as a 500 on the first request.
 */
export const checkLevelFolder = async (folder: string): Promise<void> => {
  const fromDynalite = createRequire(createRequire(__filename).resolve('dynalite/package.json'));
  const { Level } = fromDynalite('level') as { Level: LevelClass };
  const db = new Level(folder);
  try {
    await db.open();
  } catch (error) {
    const cause = (error as { cause?: { code?: string } }).cause;
    if (cause?.code === 'LEVEL_LOCKED') throw new StateInUseError(nodePath.dirname(folder));
    throw error;
  }
  await db.close();
};

/** Starts dynalite on 127.0.0.1 and creates the relay table (no TTL: dynalite has no UpdateTimeToLive). */
export const startLocalDynamo = async (options: LocalDynamoOptions = {}): Promise<LocalDynamo> => {
  // createRequire rather than `import`: dynalite has no types, and this keeps the cast in one place.
  const dynalite = createRequire(__filename)('dynalite') as DynaliteFactory;
  // Tables become ACTIVE at once instead of after dynalite's default 500 ms.
  if (options.path) await checkLevelFolder(options.path);
  const server = dynalite({
    createTableMs: 0,
    deleteTableMs: 0,
    updateTableMs: 0,
    ...(options.path ? { path: options.path } : {}),
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(options.port ?? 0, '127.0.0.1', () => {
      server.off('error', reject);
      resolve();
    });
  });
  const holdWrites = gateWrites(server);
  const { port } = server.address() as AddressInfo;
  const endpoint = `http://127.0.0.1:${port}`;
  const tableName = options.tableName ?? RELAY_TABLE.logicalName;

  // Requests being answered. dynalite closes its store as soon as the HTTP server has closed, and an
  // action still running then (an UpdateItem waiting on its item lock) meets "Database is closed",
  // which dynalite throws out of its callback: the process would die with a stack on Ctrl-C while a
  // handler is writing. So close() first lets the requests in progress finish (at most 5 s).
  let inFlight = 0;
  let drained: (() => void) | undefined;
  server.on('request', (_req, res) => {
    inFlight += 1;
    res.once('close', () => {
      inFlight -= 1;
      if (inFlight === 0) drained?.();
    });
  });
  const close = async (): Promise<void> => {
    if (inFlight > 0) {
      let timer: NodeJS.Timeout | undefined;
      await Promise.race([
        new Promise<void>((resolve) => (drained = resolve)),
        new Promise<void>((resolve) => (timer = setTimeout(resolve, 5_000))),
      ]);
      clearTimeout(timer);
    }
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
    const exists =
      options.createTable === false ||
      (options.path
        ? await client.send(new DescribeTableCommand({ TableName: tableName })).then(
            () => true,
            (error: unknown) => {
              if ((error as Error).name === 'ResourceNotFoundException') return false;
              throw error;
            },
          )
        : false);
    if (!exists)
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
    for (let i = 0; options.createTable !== false && i < 50; i += 1) {
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
  return { endpoint, tableName, holdWrites, close };
};
