/**
 * The running relay's control on loopback, for commands that need the relay itself rather than its
 * folder (`npm run state:snapshot`): an HTTP listener on 127.0.0.1 whose address and a random token
 * are written to `<STATE_DIR>/control.json` (mode 0600 in the 0700 state folder, so only who may read
 * the state may ask), removed on stop. It never listens on HOST: the API's address is for callers.
 */
import { randomBytes, timingSafeEqual } from 'node:crypto';
import { existsSync, readFileSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import { createServer, request as httpRequest } from 'node:http';
import type { AddressInfo } from 'node:net';
import * as path from 'node:path';
import { parseSnapshot, snapshotText, type SnapshotLine } from './state-snapshot';

/** The control's card in the state folder. */
export const CONTROL_FILE = 'control.json';

interface ControlCard {
  readonly url: string;
  readonly token: string;
  readonly pid: number;
}

export interface StateControl {
  readonly url: string;
  close(): Promise<void>;
}

/** Starts the control of the relay keeping its state in `dir`. */
export const startStateControl = async (options: {
  readonly dir: string;
  readonly snapshot: () => Promise<SnapshotLine[]>;
  readonly onError?: (message: string, error: unknown) => void;
}): Promise<StateControl> => {
  const token = randomBytes(32).toString('hex');
  const expected = Buffer.from(`Bearer ${token}`);
  // One snapshot at a time: a second request waits for the first.
  let queue: Promise<unknown> = Promise.resolve();
  const server = createServer((req, res) => {
    const given = Buffer.from(String(req.headers.authorization ?? ''));
    if (given.length !== expected.length || !timingSafeEqual(given, expected)) {
      res.writeHead(401, { 'content-type': 'text/plain' }).end('unauthorized\n');
      return;
    }
    if (req.method !== 'POST' || req.url !== '/snapshot') {
      res.writeHead(404, { 'content-type': 'text/plain' }).end('POST /snapshot only\n');
      return;
    }
    const taken = queue.then(() => options.snapshot());
    queue = taken.catch(() => undefined);
    taken.then(
      (lines) => res.writeHead(200, { 'content-type': 'application/x-ndjson' }).end(snapshotText(lines)),
      (error: unknown) => {
        options.onError?.('snapshot failed', error);
        res
          .writeHead(500, { 'content-type': 'text/plain' })
          .end(`${error instanceof Error ? error.message : String(error)}\n`);
      },
    );
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => resolve());
  });
  const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  const file = path.join(options.dir, CONTROL_FILE);
  const card: ControlCard = { url, token, pid: process.pid };
  writeFileSync(`${file}.${process.pid}.tmp`, `${JSON.stringify(card)}\n`, { mode: 0o600 });
  renameSync(`${file}.${process.pid}.tmp`, file);
  return {
    url,
    close: async () => {
      try {
        if ((JSON.parse(readFileSync(file, 'utf8')) as Partial<ControlCard>).token === token) rmSync(file);
      } catch {
        // gone already
      }
      await new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      });
    },
  };
};

/**
 * Asks the relay running on the state in `dir` for a snapshot. Undefined when none answers (no
 * control card, or a card left by a relay that was killed): the state is then read from the folder.
 */
export const requestSnapshot = async (dir: string): Promise<SnapshotLine[] | undefined> => {
  const file = path.join(dir, CONTROL_FILE);
  if (!existsSync(file)) return undefined;
  let card: ControlCard;
  try {
    card = JSON.parse(readFileSync(file, 'utf8')) as ControlCard;
  } catch {
    return undefined;
  }
  return new Promise((resolve, reject) => {
    const req = httpRequest(`${card.url}/snapshot`, {
      method: 'POST',
      headers: { authorization: `Bearer ${card.token}` },
    });
    req.on('error', (error: NodeJS.ErrnoException) =>
      error.code === 'ECONNREFUSED' ? resolve(undefined) : reject(error),
    );
    req.on('response', (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (c: Buffer) => chunks.push(c));
      res.on('error', reject);
      res.on('end', () => {
        const text = Buffer.concat(chunks).toString('utf8');
        if (res.statusCode === 200) resolve(parseSnapshot(text));
        else reject(new Error(`the running relay refused the snapshot (${res.statusCode}): ${text.trim()}`));
      });
    });
    req.end();
  });
};
