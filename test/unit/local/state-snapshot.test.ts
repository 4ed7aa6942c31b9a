import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import * as path from 'node:path';
import {
  DynamoDBClient,
  GetItemCommand,
  PutItemCommand,
  QueryCommand,
  ScanCommand,
  type AttributeValue,
} from '@aws-sdk/client-dynamodb';
import { RELAY_TABLE } from '../../../contract/resources';
import { startLocalDynamo, type LocalDynamo } from '../../../local/dynalite';
import { openStateDir } from '../../../local/state-dir';
import {
  captureSnapshot,
  captureStoppedState,
  parseSnapshot,
  snapshotText,
  StateSnapshotError,
  writeSnapshot,
} from '../../../local/state-snapshot';

const clientOf = (dynamo: LocalDynamo) =>
  new DynamoDBClient({
    endpoint: dynamo.endpoint,
    region: 'us-east-1',
    credentials: { accessKeyId: 'local', secretAccessKey: 'local' },
  });

describe('Function: holdWrites (local dynalite)', () => {
  it('holds writes, not reads, until released: the table cannot change while a snapshot reads it', async () => {
    // Prepare
    const dynamo = await startLocalDynamo();
    const client = clientOf(dynamo);
    const item = (pk: string) => ({ TableName: dynamo.tableName, Item: { pk: { S: pk } } });
    try {
      await client.send(new PutItemCommand(item('before')));
      // Act
      const release = await dynamo.holdWrites();
      let landed = false;
      const held = client.send(new PutItemCommand(item('held'))).then(() => (landed = true));
      await new Promise((resolve) => setTimeout(resolve, 300));
      const whileHeld = await client.send(new ScanCommand({ TableName: dynamo.tableName }));
      const landedWhileHeld = landed;
      release();
      await held;
      // Assert
      expect(landedWhileHeld).toBe(false);
      expect(whileHeld.Items?.map((i) => i.pk?.S)).toEqual(['before']);
      const after = await client.send(
        new GetItemCommand({ TableName: dynamo.tableName, Key: { pk: { S: 'held' } }, ConsistentRead: true }),
      );
      expect(after.Item).toBeDefined();
    } finally {
      client.destroy();
      await dynamo.close();
    }
  });
});

describe('Functions: captureSnapshot, writeSnapshot', () => {
  let root: string;
  beforeEach(() => {
    root = mkdtempSync(path.join(tmpdir(), 'state-snapshot-'));
  });
  afterEach(() => rmSync(root, { recursive: true, force: true }));

  it('copies every item (binary, nested and indexed attributes), both journals and the kept secret into a new state', async () => {
    // Prepare: a kept state with items, journals and a generated secret
    const source = openStateDir(path.join(root, 'state'));
    writeFileSync(path.join(source.dir, 'callback-signing-secret'), 'whsec_kept\n');
    const dynamo = await startLocalDynamo({ path: source.table, tableName: 'relay-x' });
    const client = clientOf(dynamo);
    const items: Record<string, AttributeValue>[] = [
      { pk: { S: 'KEY#ci' }, scopes: { SS: ['order', 'read'] }, blob: { B: new Uint8Array([0, 1, 255]) } },
      { pk: { S: 'TASK#t1' }, nested: { M: { list: { L: [{ N: '1.5' }, { BS: [new Uint8Array([120])] }] } } } },
      { pk: { S: 'WAIT#t2' }, wq: { S: RELAY_TABLE.waitingIndex.partition }, wq_order: { S: '0001' } },
    ];
    for (const Item of items) await client.send(new PutItemCommand({ TableName: 'relay-x', Item }));
    client.destroy();
    const lines = await captureSnapshot({
      dir: source.dir,
      dynamoEndpoint: dynamo.endpoint,
      tableName: 'relay-x',
      holdWrites: dynamo.holdWrites,
      journals: () => ({ queue: '{"op":"sent"}\n', executions: '{"op":"start"}\n' }),
    });
    await dynamo.close();

    // Act
    const dest = path.join(root, 'copy');
    // as the control sends it and the command reads it: JSON lines
    const written = await writeSnapshot(dest, parseSnapshot(snapshotText(lines)));

    // Assert
    expect(written).toEqual({ items: 3 });
    expect(readFileSync(path.join(dest, 'queue.jsonl'), 'utf8')).toBe('{"op":"sent"}\n');
    expect(readFileSync(path.join(dest, 'executions.jsonl'), 'utf8')).toBe('{"op":"start"}\n');
    expect(readFileSync(path.join(dest, 'callback-signing-secret'), 'utf8')).toBe('whsec_kept\n');
    expect(JSON.parse(readFileSync(path.join(dest, 'state.json'), 'utf8'))).toMatchObject({
      snapshot: { of: source.dir },
    });
    expect(openStateDir(dest).created).toBe(false);
    const copy = await startLocalDynamo({ path: path.join(dest, 'table'), tableName: 'relay-x' });
    const reader = clientOf(copy);
    try {
      const scanned = await reader.send(new ScanCommand({ TableName: 'relay-x' }));
      const byKey = (list: typeof items) => [...list].sort((a, b) => String(a.pk?.S).localeCompare(String(b.pk?.S)));
      expect(byKey(scanned.Items ?? [])).toEqual(byKey(items));
      // the index is there too, built by the copy's own table
      const waiting = await reader.send(
        new QueryCommand({
          TableName: 'relay-x',
          IndexName: RELAY_TABLE.waitingIndex.name,
          KeyConditionExpression: 'wq = :q',
          ExpressionAttributeValues: { ':q': { S: RELAY_TABLE.waitingIndex.partition } },
        }),
      );
      expect(waiting.Items?.map((i) => i.pk?.S)).toEqual(['WAIT#t2']);
    } finally {
      reader.destroy();
      await copy.close();
    }
    // The same folder, stopped, read directly gives the same items
    expect((await captureStoppedState(source.dir)).filter((l) => l.kind === 'item')).toHaveLength(3);
  });

  it('refuses a snapshot cut short or a folder that is not empty, and leaves nothing behind', async () => {
    // Prepare
    const source = openStateDir(path.join(root, 'state'));
    const dynamo = await startLocalDynamo({ path: source.table });
    const client = clientOf(dynamo);
    await client.send(new PutItemCommand({ TableName: dynamo.tableName, Item: { pk: { S: 'a' } } }));
    client.destroy();
    const lines = await captureSnapshot({
      dir: source.dir,
      dynamoEndpoint: dynamo.endpoint,
      tableName: dynamo.tableName,
      journals: () => ({ queue: '', executions: '' }),
    });
    await dynamo.close();

    // Act / Assert
    await expect(writeSnapshot(path.join(root, 'cut'), lines.slice(0, -1))).rejects.toThrow(/incomplete \(cut short\)/);
    expect(existsSync(path.join(root, 'cut'))).toBe(false);
    await expect(writeSnapshot(source.dir, lines)).rejects.toThrow(StateSnapshotError);
    expect(existsSync(source.table)).toBe(true);
  });
});
