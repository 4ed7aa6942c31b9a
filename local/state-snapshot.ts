/**
 * A snapshot of `npm start`'s kept state (`npm run state:snapshot -- <dir>`): a fresh state folder a
 * stopped relay can start from (`STATE_DIR=<dir> npm start`), taken while the relay runs or while it
 * is stopped.
 *
 * While it runs, the relay takes the snapshot itself (its loopback control, local/state-control.ts):
 * it holds the table's writes, waits for those in progress to answer, and then, with nothing able to
 * change, copies the two journals from memory and reads the table through its DynamoDB endpoint;
 * then writes flow again. The copy is therefore the state at one instant, the same state a SIGKILL
 * at that instant would have left, and a relay started on it carries on exactly what a restart after
 * such a crash carries on (docs/one-machine.md "Restart: what carries on"). LevelDB's folder itself is
 * never copied: the running relay holds its lock and writes it at any time.
 *
 * The snapshot travels as lines of JSON (one header, the kept secrets, the journals, one line per
 * item, and an end line with the count, so a cut-short copy is refused); the writer builds the
 * folder with its own dynalite and writes `state.json` last, so a folder left half-written is never
 * taken for a state.
 */
import { existsSync, mkdirSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import * as path from 'node:path';
import {
  BatchWriteItemCommand,
  DynamoDBClient,
  ListTablesCommand,
  ScanCommand,
  type AttributeValue,
} from '@aws-sdk/client-dynamodb';
import { startLocalDynamo } from './dynalite';
import { KEPT_SECRET_FILES, STAMP, STATE_FORMAT, statePaths, type StateStamp } from './state-dir';

/** One line of a snapshot. Items are DynamoDB JSON with binary values in base64, as on the wire. */
export type SnapshotLine =
  | {
      readonly kind: 'header';
      readonly format: number;
      readonly tableName: string;
      readonly takenAt: string;
      /** The folder the snapshot was taken of. */
      readonly of: string;
      readonly createdBy: string;
      readonly createdAt: string;
    }
  | { readonly kind: 'file'; readonly name: string; readonly text: string }
  | { readonly kind: 'queue'; readonly text: string }
  | { readonly kind: 'executions'; readonly text: string }
  | { readonly kind: 'item'; readonly item: Record<string, unknown> }
  | { readonly kind: 'end'; readonly items: number };

/** A snapshot that cannot be taken or written; the message says why. */
export class StateSnapshotError extends Error {
  public constructor(message: string) {
    super(message);
    this.name = 'StateSnapshotError';
  }
}

/** What a snapshot is taken from: a table on a DynamoDB endpoint and the rest of a state folder. */
export interface SnapshotSource {
  /** The state folder (its stamp and kept secrets are read from there). */
  readonly dir: string;
  readonly dynamoEndpoint: string;
  readonly tableName: string;
  /**
   * Holds the table's writes until the returned release is called (LocalDynamo.holdWrites).
   * @default - none: the source is not running (an offline snapshot)
   */
  readonly holdWrites?: () => Promise<() => void>;
  /** The journals as they stand, read while the writes are held. */
  readonly journals: () => { readonly queue: string; readonly executions: string };
}

type WireValue = AttributeValue | Record<string, unknown>;

/** Binary values as base64 strings (JSON), everything else as it is; `decode` is the inverse. */
const encodeValue = (value: AttributeValue): Record<string, unknown> => {
  if (value.B) return { B: Buffer.from(value.B).toString('base64') };
  if (value.BS) return { BS: value.BS.map((b) => Buffer.from(b).toString('base64')) };
  if (value.M) return { M: encodeItem(value.M) };
  if (value.L) return { L: value.L.map(encodeValue) };
  return value as unknown as Record<string, unknown>;
};
const encodeItem = (item: Record<string, AttributeValue>): Record<string, unknown> =>
  Object.fromEntries(Object.entries(item).map(([k, v]) => [k, encodeValue(v)]));
const decodeValue = (value: WireValue): AttributeValue => {
  const v = value as Record<string, unknown>;
  if (typeof v.B === 'string') return { B: Buffer.from(v.B, 'base64') };
  if (Array.isArray(v.BS)) return { BS: (v.BS as string[]).map((b) => Buffer.from(b, 'base64')) };
  if (v.M) return { M: decodeItem(v.M as Record<string, unknown>) };
  if (Array.isArray(v.L)) return { L: (v.L as WireValue[]).map(decodeValue) };
  return value as AttributeValue;
};
const decodeItem = (item: Record<string, unknown>): Record<string, AttributeValue> =>
  Object.fromEntries(Object.entries(item).map(([k, v]) => [k, decodeValue(v as WireValue)]));

const localClient = (endpoint: string): DynamoDBClient =>
  new DynamoDBClient({
    endpoint,
    region: 'us-east-1',
    credentials: { accessKeyId: 'local', secretAccessKey: 'local' },
    maxAttempts: 1,
  });

const readStamp = (dir: string): StateStamp => {
  const file = path.join(dir, STAMP);
  if (!existsSync(file)) throw new StateSnapshotError(`${dir} holds no relay state (no ${STAMP})`);
  return JSON.parse(readFileSync(file, 'utf8')) as StateStamp;
};

/**
 * Takes a snapshot of `source`: the state at one instant (see the module comment). The table's
 * writes are held only while the journals are copied and the table is read, not while the lines are
 * sent.
 */
export const captureSnapshot = async (source: SnapshotSource): Promise<SnapshotLine[]> => {
  const stamp = readStamp(source.dir);
  if (stamp.format !== STATE_FORMAT)
    throw new StateSnapshotError(`${source.dir} is in state format ${stamp.format}; this relay reads ${STATE_FORMAT}`);
  const files: SnapshotLine[] = KEPT_SECRET_FILES.filter((name) => existsSync(path.join(source.dir, name))).map(
    (name) => ({ kind: 'file', name, text: readFileSync(path.join(source.dir, name), 'utf8') }),
  );
  const client = localClient(source.dynamoEndpoint);
  const release = source.holdWrites ? await source.holdWrites() : () => undefined;
  let takenAt: string;
  let journals: { readonly queue: string; readonly executions: string };
  const items: SnapshotLine[] = [];
  try {
    // The instant of the snapshot: no table write is in progress, none can start, and the journals
    // (written synchronously by this process) are copied in the same tick.
    takenAt = new Date().toISOString();
    journals = source.journals();
    let start: Record<string, AttributeValue> | undefined;
    do {
      const page = await client.send(
        new ScanCommand({ TableName: source.tableName, ConsistentRead: true, ExclusiveStartKey: start }),
      );
      for (const item of page.Items ?? []) items.push({ kind: 'item', item: encodeItem(item) });
      start = page.LastEvaluatedKey;
    } while (start);
  } finally {
    release();
    client.destroy();
  }
  return [
    {
      kind: 'header',
      format: STATE_FORMAT,
      tableName: source.tableName,
      takenAt,
      of: source.dir,
      createdBy: stamp.createdBy,
      createdAt: stamp.createdAt,
    },
    ...files,
    { kind: 'queue', text: journals.queue },
    { kind: 'executions', text: journals.executions },
    ...items,
    { kind: 'end', items: items.length },
  ];
};

/** Takes an offline snapshot of a state no relay is running on (it fails if one is: the folder's lock). */
export const captureStoppedState = async (dir: string): Promise<SnapshotLine[]> => {
  const paths = statePaths(dir);
  readStamp(paths.dir);
  const read = (file: string) => (existsSync(file) ? readFileSync(file, 'utf8') : '');
  if (!existsSync(paths.table)) {
    throw new StateSnapshotError(`${paths.dir} has no table folder: nothing to copy`);
  }
  // Holding the folder's lock for the whole copy: an npm start meanwhile is refused, not mixed in.
  const dynamo = await startLocalDynamo({ path: paths.table, createTable: false });
  try {
    const client = localClient(dynamo.endpoint);
    const tables = await client.send(new ListTablesCommand({})).finally(() => client.destroy());
    const tableName = tables.TableNames?.[0];
    if (!tableName || (tables.TableNames?.length ?? 0) > 1)
      throw new StateSnapshotError(`${paths.table} holds ${tables.TableNames?.length ?? 0} tables; expected one`);
    return await captureSnapshot({
      dir: paths.dir,
      dynamoEndpoint: dynamo.endpoint,
      tableName,
      journals: () => ({ queue: read(paths.queue), executions: read(paths.executions) }),
    });
  } finally {
    await dynamo.close();
  }
};

/** Parses a snapshot's lines (JSON text, one per line). */
export const parseSnapshot = (text: string): SnapshotLine[] =>
  text
    .split('\n')
    .filter((line) => line.trim() !== '')
    .map((line) => JSON.parse(line) as SnapshotLine);

/** The lines as text, one JSON value per line. */
export const snapshotText = (lines: readonly SnapshotLine[]): string =>
  lines.map((line) => `${JSON.stringify(line)}\n`).join('');

/**
 * Writes a snapshot as a state folder at `dest`, which must be absent or empty. A snapshot cut short
 * (no end line, or fewer items than it counts) is refused and nothing is left at `dest`.
 */
export const writeSnapshot = async (dest: string, lines: readonly SnapshotLine[]): Promise<{ items: number }> => {
  const paths = statePaths(dest);
  if (existsSync(paths.dir) && readdirSync(paths.dir).length > 0)
    throw new StateSnapshotError(`${paths.dir} is not empty: a snapshot is written to a new or empty folder`);
  const header = lines[0];
  const end = lines.at(-1);
  const items = lines.filter((l): l is Extract<SnapshotLine, { kind: 'item' }> => l.kind === 'item');
  if (header?.kind !== 'header') throw new StateSnapshotError('the snapshot has no header');
  if (end?.kind !== 'end' || end.items !== items.length)
    throw new StateSnapshotError('the snapshot is incomplete (cut short): nothing was written');
  if (header.format !== STATE_FORMAT)
    throw new StateSnapshotError(`the snapshot is in state format ${header.format}; this relay writes ${STATE_FORMAT}`);
  const existed = existsSync(paths.dir);
  mkdirSync(paths.dir, { recursive: true, mode: 0o700 });
  try {
    const dynamo = await startLocalDynamo({ path: paths.table, tableName: header.tableName });
    const client = localClient(dynamo.endpoint);
    try {
      for (let i = 0; i < items.length; i += 25) {
        let requests: Record<string, { PutRequest: { Item: Record<string, AttributeValue> } }[]> = {
          [header.tableName]: items.slice(i, i + 25).map((l) => ({ PutRequest: { Item: decodeItem(l.item) } })),
        };
        for (let attempt = 0; Object.keys(requests).length > 0; attempt += 1) {
          if (attempt > 20) throw new StateSnapshotError('the table copy did not complete (unprocessed items)');
          const answer = await client.send(new BatchWriteItemCommand({ RequestItems: requests }));
          requests = (answer.UnprocessedItems ?? {}) as typeof requests;
        }
      }
    } finally {
      client.destroy();
      await dynamo.close();
    }
    for (const line of lines) {
      if (line.kind === 'file' && KEPT_SECRET_FILES.includes(line.name))
        writeFileSync(path.join(paths.dir, line.name), line.text, { mode: 0o600 });
      if (line.kind === 'queue') writeFileSync(paths.queue, line.text, { mode: 0o600 });
      if (line.kind === 'executions') writeFileSync(paths.executions, line.text, { mode: 0o600 });
    }
    // Last: until the stamp exists, npm start refuses the folder (not empty, no state.json).
    const stamp: StateStamp = {
      format: header.format,
      createdBy: header.createdBy,
      createdAt: header.createdAt,
      snapshot: { takenAt: header.takenAt, of: header.of },
    };
    writeFileSync(path.join(paths.dir, STAMP), `${JSON.stringify(stamp, null, 2)}\n`, { mode: 0o600 });
  } catch (error) {
    if (existed) for (const entry of readdirSync(paths.dir)) rmSync(path.join(paths.dir, entry), { recursive: true });
    else rmSync(paths.dir, { recursive: true, force: true });
    throw error;
  }
  return { items: items.length };
};
