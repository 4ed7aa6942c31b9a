/**
 * Every `gpu-relay` line in a code block of README.md and docs/ (issue 28), run in document order
 * against one local relay started as `npm start` starts it (its card in the folder, the simulator with
 * the documented examples' servers, nothing set in the environment), each succeeding (exit 0).
 * Placeholders stand for what earlier lines produced: an ORDER_ID is the last order a line rented, a
 * TASK_ID the last task a line queued; `eval "$(npx gpu-relay env)"` exports into the environment the
 * later lines run with, and `verify` checks a callback signed with the secret it exported. A transcript
 * (`$ gpu-relay …` and the lines under it) must be the CLI's real output (issue 37 §6): every line it
 * shows has the shape of a line the run printed (ids, keys, hosts and numbers aside).
 */
import { mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import * as path from 'node:path';
import { Webhook } from 'standardwebhooks';
import { publishLocalRelay } from '../../local/local-relay-file';
import type { PublishedCard } from '../../local/local-relay-file';
import { startLocalRuntime } from '../../local/runtime';
import type { LocalRuntime } from '../../local/runtime';
import { generateSshKeyPair } from '../helpers/ssh-keys';
import { waitUntil } from '../helpers/until';
import { runCli } from '../unit/cli/run-cli';

const ROOT = path.resolve(__dirname, '../..');
const PAGES = [
  'README.md',
  ...readdirSync(path.join(ROOT, 'docs'))
    .filter((n) => n.endsWith('.md'))
    .sort()
    .map((n) => `docs/${n}`),
];

interface Example {
  readonly page: string;
  readonly line: string;
  /** A transcript's (`$ gpu-relay …`) output lines as documented, up to the next `$ ` line or the block's end. */
  readonly output: string[];
}

/** `gpu-relay …` command lines in fenced code blocks, in document order (shell comments left out). */
const examples: Example[] = PAGES.flatMap((page) => {
  const found: Example[] = [];
  let fenced = false;
  let transcript: Example | undefined;
  for (const raw of readFileSync(path.join(ROOT, page), 'utf8').split('\n')) {
    if (/^\s*```/.test(raw)) {
      fenced = !fenced;
      transcript = undefined;
    } else if (fenced) {
      const prompt = /^\$ /.test(raw.trim());
      const line = raw.trim().replace(/^\$ /, '');
      if (prompt) transcript = undefined;
      else if (transcript) {
        transcript.output.push(raw);
        continue;
      }
      if (!line.startsWith('#') && /(^|[\s|("])(npx )?gpu-relay [a-z]/.test(line)) {
        const example = { page, line, output: [] };
        found.push(example);
        if (prompt) transcript = example;
      }
    }
  }
  return found;
});

/**
 * A line's shape: what stays when the values of one run are taken out (task ids, keys and tokens,
 * hosts, numbers), so a documented transcript compares with a real run's output.
 */
const shape = (line: string): string =>
  line
    .trim()
    .replace(/[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}/gi, '<id>')
    .replace(/SHA256:[A-Za-z0-9+/]{43}/g, '<fingerprint>')
    .replace(/(?<![A-Za-z0-9+/])[A-Za-z0-9+/]{24,}={0,2}/g, '<blob>')
    .replace(/\b\d{1,3}(\.\d{1,3}){3}\b/g, '<host>')
    .replace(/\b[a-z][a-z0-9-]*(\.[a-z0-9-]+)*\.(example|invalid|com|net)\b/g, '<host>')
    .replace(/\d+(\.\d+)?/g, '<n>');

/** The documented output lines no real output line has the shape of (`…` lines stand for left-out ones). */
const unlikeOutput = (documented: readonly string[], real: string): string[] => {
  const seen = new Set(real.split('\n').map(shape));
  return documented.filter((line) => line.trim() !== '' && !/^\s*(…|\.\.\.)\s*$/.test(line) && !seen.has(shape(line)));
};

/** Shell words of a command line (quotes, `$VAR` / `"$VAR"` from `env`), up to a ` #` comment. */
const words = (line: string, env: Readonly<Record<string, string>>): string[] => {
  const out: string[] = [];
  const re = /"((?:[^"\\]|\\.)*)"|'([^']*)'|(\S+)/g;
  for (const m of line.matchAll(re)) {
    // A comment, a redirection or a pipe ends the command's words.
    if (m[3]?.startsWith('#') || (m[3] !== undefined && /^(>>?|\||2>)/.test(m[3]))) break;
    const word = m[1] ?? m[2] ?? m[3] ?? '';
    out.push(m[2] !== undefined ? word : word.replace(/\$([A-Z_]+)/g, (_, name: string) => env[name] ?? ''));
  }
  return out;
};

/** The `gpu-relay …` part of a line: inside `$( … )` when it is a command substitution. */
const commandText = (line: string): string => {
  const text = line.slice(line.indexOf('gpu-relay '));
  return line.includes('$(') && text.includes(')') ? text.slice(0, text.indexOf(')')) : text;
};

const TASK_ID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

describe('Docs: every gpu-relay example, in order, against one local relay', () => {
  let runtime: LocalRuntime;
  let card: PublishedCard;
  let dir: string;

  beforeAll(async () => {
    dir = mkdtempSync(path.join(tmpdir(), 'gpu-relay-docs-'));
    // A reader's home (issue 37): the key create-order offers and `ssh` logs in with, and the script
    // `--command-file setup.sh` names, in the folder the lines run in.
    const pair = generateSshKeyPair('reader@docs');
    mkdirSync(path.join(dir, 'home', '.ssh'), { recursive: true, mode: 0o700 });
    writeFileSync(path.join(dir, 'home', '.ssh', 'id_ed25519'), pair.privateKey, { mode: 0o600 });
    writeFileSync(path.join(dir, 'home', '.ssh', 'id_ed25519.pub'), `${pair.publicKey.trim()}\n`);
    writeFileSync(path.join(dir, 'setup.sh'), '#!/bin/sh\necho ready\n');
    runtime = await startLocalRuntime({
      port: 0,
      quiet: true,
      simulator: { docsServers: true, minIntervalMs: 50, readyDelayMs: 300 },
      env: { ORDER_POLL_INTERVAL_SECONDS: '1', JOB_RETRY_BASE_MS: '10' },
    });
    card = publishLocalRelay(runtime, dir);
  }, 60_000);
  afterAll(async () => {
    card?.remove();
    await runtime?.close();
    rmSync(dir, { recursive: true, force: true });
  });

  it('finds the documented examples (the first GPU, env, status, cancel-task, keys)', () => {
    const commands = examples.map((e) => words(commandText(e.line), {})[1]);
    for (const command of ['create-order', 'env', 'status', 'cancel-order', 'cancel-task', 'marketplace', 'keys'])
      expect(commands).toContain(command);
  });

  it('runs each one successfully, printing what its transcript shows', async () => {
    const env: Record<string, string> = { HOME: path.join(dir, 'home') };
    let lastOrder: number | undefined;
    let lastTask: string | undefined;
    let lastOrderTask: string | undefined;
    const failures: string[] = [];
    for (const { page, line, output } of examples) {
      const [, ...args] = words(commandText(line), env);
      const [command] = args;
      if (['cancel-order', 'extend-order', 'set-spot-price'].includes(command) && lastOrder !== undefined)
        args[1] = String(lastOrder);
      if (['task', 'cancel-task'].includes(command) && lastTask !== undefined) args[1] = lastTask;
      // Logging in (issue 37): into the last order a line rented.
      if (['ssh', 'ssh-config'].includes(command) && lastOrderTask !== undefined) args[1] = lastOrderTask;
      if (command === 'cancel-task' && lastTask !== undefined) {
        // As a reader would: cancel once `gpu-relay task` shows the standing order waiting.
        const id = lastTask;
        await waitUntil(
          async () => /"state": "waiting"/.test((await runCli(['task', id], { cwd: dir, env: { ...env } })).stdout),
          `task ${id} to wait for a server`,
          60_000,
        );
      }
      let stdin: string | undefined;
      if (command === 'verify') {
        // A callback as the relay signs it, with the secret `gpu-relay env` exported.
        const body = JSON.stringify({ task_id: lastTask, success: true });
        const at = new Date();
        const signature = new Webhook(env.CALLBACK_SIGNING_SECRET ?? '').sign('msg_docs', at, body);
        Object.assign(env, {
          BODY: body,
          WEBHOOK_ID: 'msg_docs',
          WEBHOOK_TIMESTAMP: String(Math.floor(at.getTime() / 1000)),
          WEBHOOK_SIGNATURE: signature,
        });
        stdin = body;
        args.splice(0, args.length, ...words(commandText(line), env).slice(1));
      }
      const run = await runCli(args, { cwd: dir, env: { ...env }, stdin, timeoutMs: 60_000 });
      if (run.code !== 0)
        failures.push(
          `${page}: ${line}\n  → exit ${run.code}: ${run.stdout.slice(-300)} ${run.stderr.trim().slice(-300)}`,
        );
      const unlike = unlikeOutput(output, `${run.stdout}\n${run.stderr}`);
      if (run.code === 0 && unlike.length > 0)
        failures.push(`${page}: ${line}\n  → printed nothing like: ${unlike.join(' / ').slice(0, 400)}`);
      if (command === 'env') for (const [, name, value] of run.stdout.matchAll(/([A-Z_]+)=(\S+)/g)) env[name] = value;
      const queued = /queued task (\S+)/.exec(run.stderr)?.[1] ?? /"task_id": "([^"]+)"/.exec(run.stdout)?.[1];
      if (queued && TASK_ID.test(queued) && !['task', 'ssh', 'ssh-config'].includes(command)) lastTask = queued;
      const ordered = /"order_id": (\d+)/.exec(run.stdout)?.[1];
      if (command === 'create-order' && ordered) {
        lastOrder = Number(ordered);
        lastOrderTask = queued;
      }
    }
    expect(failures).toEqual([]);
  }, 600_000);
});
