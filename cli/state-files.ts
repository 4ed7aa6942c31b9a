/**
 * The CLI's own files: its known_hosts (`$XDG_CONFIG_HOME/gpu-relay/known_hosts`, default
 * `~/.config/gpu-relay/known_hosts`) and its record of which task placed which order
 * (`$XDG_STATE_HOME/gpu-relay/orders.json`, default `~/.local/state/gpu-relay/orders.json`): the relay
 * has no route from an order id to its task, so `gpu-relay ssh ORDER_ID` reads what this machine saw.
 */
import { mkdirSync, readFileSync, renameSync, writeFileSync } from 'node:fs';
import { homedir } from 'node:os';
import * as path from 'node:path';
import { err } from './output';

const xdgDir = (variable: string, fallback: readonly string[]): string => {
  const set = process.env[variable];
  // The XDG spec: a relative value is invalid and is ignored.
  const base = set && path.isAbsolute(set) ? set : path.join(homedir(), ...fallback);
  return path.join(base, 'gpu-relay');
};

export const configDir = (): string => xdgDir('XDG_CONFIG_HOME', ['.config']);
export const stateDir = (): string => xdgDir('XDG_STATE_HOME', ['.local', 'state']);

/** The known_hosts file `gpu-relay ssh` pins host keys in. */
export const knownHostsFile = (): string => path.join(configDir(), 'known_hosts');

/** The order → task record. */
export const orderRecordFile = (): string => path.join(stateDir(), 'orders.json');

/** Writes `text` to `file` (mode 0600, its folder 0700) through a temporary file, so no reader sees half of it. */
export const writePrivateFile = (file: string, text: string): void => {
  mkdirSync(path.dirname(file), { recursive: true, mode: 0o700 });
  const temp = `${file}.${process.pid}.tmp`;
  writeFileSync(temp, text, { mode: 0o600 });
  renameSync(temp, file);
};

export interface OrderRecord {
  readonly order_id: number;
  readonly task_id: string;
  /** ISO time the CLI saw the result. */
  readonly seen_at: string;
}

/** The newest records kept; an order older than these is found by its task id. */
const MAX_RECORDS = 500;

const readRecords = (): OrderRecord[] => {
  try {
    const parsed: unknown = JSON.parse(readFileSync(orderRecordFile(), 'utf8'));
    const list = (parsed as { orders?: unknown })?.orders;
    return Array.isArray(list)
      ? list.filter(
          (r): r is OrderRecord =>
            typeof r === 'object' && r !== null && Number.isInteger(r.order_id) && typeof r.task_id === 'string',
        )
      : [];
  } catch {
    return [];
  }
};

/**
 * Remembers that `taskId` placed `orderId`. A failure to write is said on stderr and otherwise
 * ignored: the command itself succeeded.
 */
export const recordOrder = (orderId: number, taskId: string): void => {
  try {
    const records = readRecords().filter((r) => r.order_id !== orderId);
    records.push({ order_id: orderId, task_id: taskId, seen_at: new Date().toISOString() });
    writePrivateFile(orderRecordFile(), `${JSON.stringify({ orders: records.slice(-MAX_RECORDS) }, null, 2)}\n`);
  } catch (error) {
    err(`gpu-relay: could not remember order ${orderId} in ${orderRecordFile()}: ${(error as Error).message}`);
  }
};

/** The task that placed `orderId`, as this machine recorded it. */
export const taskOfOrder = (orderId: number): string | undefined =>
  readRecords().find((r) => r.order_id === orderId)?.task_id;

/** Records the order of a successful create-order result (callback body or task record's `result`). */
export const recordCreateOrderResult = (taskId: string, result: unknown): void => {
  const r = result as { success?: unknown; order_id?: unknown } | null;
  if (r && typeof r === 'object' && r.success === true && Number.isInteger(r.order_id))
    recordOrder(r.order_id as number, taskId);
};
