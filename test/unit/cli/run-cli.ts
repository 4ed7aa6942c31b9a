/**
 * Test helpers for the CLI (bin/gpu-relay.mjs, which loads cli/main.ts): run it as a real child process
 * (the way users run it, and the only way jest can drive an ESM bin), and a fake relay that records
 * what the CLI sent.
 */
import { spawn } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { createServer } from 'node:http';
import type { IncomingHttpHeaders, Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import * as path from 'node:path';

export const CLI_PATH = path.resolve(__dirname, '../../../bin/gpu-relay.mjs');

/**
 * An empty home folder for every run that names none: the CLI reads ~/.ssh/id_ed25519.pub (create-order's
 * default key) and writes ~/.config/gpu-relay and ~/.local/state/gpu-relay, never the tester's own.
 */
let emptyHome: string | undefined;
const defaultHome = (): string => {
  if (emptyHome === undefined) {
    const dir = mkdtempSync(path.join(tmpdir(), 'gpu-relay-home-'));
    process.on('exit', () => rmSync(dir, { recursive: true, force: true }));
    emptyHome = dir;
  }
  return emptyHome;
};

export interface CliRun {
  readonly code: number | null;
  readonly stdout: string;
  readonly stderr: string;
}

/**
 * Runs the CLI with `args`. The environment is minimal and explicit (no GPU_RELAY_* or WEBHOOK_SECRET
 * leaks in from the shell running the tests), and so is the directory: the system's temporary one
 * unless `cwd` says otherwise, so a `.relay/local.json` of an `npm start` in this checkout is not read.
 * HOME is an empty folder unless `env` names one.
 */
export const runCli = (
  args: readonly string[],
  opts: { env?: Record<string, string>; stdin?: string | Buffer; timeoutMs?: number; cwd?: string } = {},
): Promise<CliRun> =>
  new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [CLI_PATH, ...args], {
      cwd: opts.cwd ?? tmpdir(),
      env: { PATH: process.env.PATH ?? '', HOME: defaultHome(), ...(opts.env ?? {}) },
      stdio: ['pipe', 'pipe', 'pipe'],
    });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (chunk: Buffer) => (stdout += chunk.toString('utf8')));
    child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString('utf8')));
    // A hung CLI must fail the test, not the whole jest run.
    const killer = setTimeout(() => child.kill('SIGKILL'), opts.timeoutMs ?? 30_000);
    child.on('error', reject);
    child.on('close', (code) => {
      clearTimeout(killer);
      resolve({ code, stdout, stderr });
    });
    child.stdin.on('error', () => undefined);
    child.stdin.end(opts.stdin ?? '');
  });

export interface RecordedRequest {
  readonly method: string;
  readonly url: string;
  readonly headers: IncomingHttpHeaders;
  readonly body: Buffer;
}

export interface FakeReply {
  readonly status: number;
  readonly body?: unknown;
  readonly headers?: Record<string, string>;
}

export interface FakeRelay {
  readonly url: string;
  readonly requests: RecordedRequest[];
  /** Sets how the next requests are answered; `after` runs once the reply is sent (e.g. to call back). */
  respond(fn: (req: RecordedRequest) => FakeReply, after?: (req: RecordedRequest) => Promise<void> | void): void;
  close(): Promise<void>;
}

/** A relay stand-in on an ephemeral port that records every request and answers as told. */
export const startFakeRelay = async (): Promise<FakeRelay> => {
  const requests: RecordedRequest[] = [];
  let reply: (req: RecordedRequest) => FakeReply = () => ({
    status: 202,
    body: { status: 'queued', task_id: 't-1', message: 'ok' },
  });
  let after: ((req: RecordedRequest) => Promise<void> | void) | undefined;
  const pending: Promise<unknown>[] = [];
  const server: Server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (chunk: Buffer) => chunks.push(chunk));
    req.on('end', () => {
      const recorded: RecordedRequest = {
        method: req.method ?? '',
        url: req.url ?? '',
        headers: req.headers,
        body: Buffer.concat(chunks),
      };
      requests.push(recorded);
      const answer = reply(recorded);
      res.writeHead(answer.status, { 'content-type': 'application/json', ...(answer.headers ?? {}) });
      res.end(answer.body === undefined ? '' : JSON.stringify(answer.body), () => {
        if (after) pending.push(Promise.resolve(after(recorded)).catch(() => undefined));
      });
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}`,
    requests,
    respond(fn, then) {
      reply = fn;
      after = then;
    },
    async close() {
      await Promise.all(pending);
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
};

/** Parses the CLI's stdout as one JSON document. */
export const stdoutJson = (run: CliRun): unknown => JSON.parse(run.stdout);
