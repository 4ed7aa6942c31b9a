#!/usr/bin/env node
/**
 * gpu-relay: command-line client of the GPU Order Relay.
 *
 * Signs the exact bytes it sends (HMAC-SHA256, lowercase hex, over `<timestamp>.<body>` by default),
 * prints the relay's answer, and can wait for the task's result through a callback to a local
 * listener (verified per Standard Webhooks with the callback signing secret) or by polling
 * GET /webhook/tasks/{task_id}.
 *
 * Plain Node 20 and no build step, so `npx gpu-relay` works from a fresh clone; its one dependency is
 * the package's own `standardwebhooks` (callbacks are verified with it, not with hand-written code).
 * Exit codes: 0 success, 1 task failed (or a callback signature did not verify), 2 usage or HTTP error.
 */
import { createHmac, randomBytes } from 'node:crypto';
import { createServer } from 'node:http';
import { parseArgs } from 'node:util';
import { Webhook } from 'standardwebhooks';

const EXIT_OK = 0;
const EXIT_TASK_FAILED = 1;
const EXIT_USAGE = 2;

const DEFAULT_URL = 'http://127.0.0.1:5000';
/** Same window the relay applies to timestamped requests (lambdas/domain/signing.ts). */
const REPLAY_WINDOW_SECONDS = 300;
const MAX_CALLBACK_BYTES = 1024 * 1024;
const REQUEST_TIMEOUT_MS = 30_000;

const OPTIONS = {
  url: { type: 'string' },
  secret: { type: 'string' },
  'callback-secret': { type: 'string' },
  id: { type: 'string' },
  gpu: { type: 'string' },
  'max-price': { type: 'string' },
  'on-demand': { type: 'boolean' },
  image: { type: 'string' },
  env: { type: 'string', multiple: true },
  callback: { type: 'string' },
  target: { type: 'string' },
  'max-hours': { type: 'string' },
  hours: { type: 'string' },
  price: { type: 'string' },
  signature: { type: 'string' },
  timestamp: { type: 'string' },
  'max-age': { type: 'string' },
  'no-timestamp': { type: 'boolean' },
  'idempotency-key': { type: 'string' },
  wait: { type: 'boolean' },
  poll: { type: 'boolean' },
  interval: { type: 'string' },
  timeout: { type: 'string' },
  'listen-port': { type: 'string' },
  'listen-host': { type: 'string' },
  'public-url': { type: 'string' },
  verbose: { type: 'boolean' },
  help: { type: 'boolean', short: 'h' },
};

const CONNECTION = ['url', 'secret', 'no-timestamp', 'verbose', 'help'];
const SEND = [...CONNECTION, 'idempotency-key'];
const WAIT = ['wait', 'poll', 'interval', 'timeout', 'listen-port', 'listen-host', 'public-url', 'callback-secret'];

/** Which options each command accepts, and its usage text. */
const COMMANDS = {
  'create-order': {
    options: [...SEND, ...WAIT, 'gpu', 'max-price', 'max-hours', 'on-demand', 'image', 'env', 'callback'],
    usage: 'create-order --gpu TYPE [--max-price USD_PER_HOUR] [--max-hours H] [--on-demand] [--image IMAGE] [--env NAME=VALUE]... [--callback URL] [--wait [--poll]]',
    summary: 'rent the first matching server (POST /webhook/create-order)',
  },
  'cancel-order': {
    options: [...SEND, ...WAIT, 'callback'],
    usage: 'cancel-order ORDER_ID [--callback URL] [--wait [--poll]]',
    summary: 'cancel an order (POST /webhook/cancel-order)',
  },
  'extend-order': {
    options: [...SEND, ...WAIT, 'hours', 'callback'],
    usage: 'extend-order ORDER_ID --hours H [--callback URL] [--wait [--poll]]',
    summary: 'extend (or start) an order\'s lease by H hours (POST /webhook/extend-order)',
  },
  'set-spot-price': {
    options: [...SEND, ...WAIT, 'price', 'callback'],
    usage: 'set-spot-price ORDER_ID --price COIN_PER_DAY [--callback URL] [--wait [--poll]]',
    summary: 'change the bid of a spot order (POST /webhook/set-spot-price)',
  },
  'price-alert': {
    options: [...SEND, ...WAIT, 'gpu', 'target', 'image', 'callback'],
    usage: 'price-alert --gpu TYPE --target USD_PER_HOUR [--image IMAGE] [--callback URL] [--wait [--poll]]',
    summary: 'one price check; rents at or under the target (POST /webhook/price-alert)',
  },
  status: {
    options: [...SEND, ...WAIT, 'callback'],
    usage: 'status [--callback URL] [--wait [--poll]]',
    summary: 'list the account\'s orders (POST /webhook/status)',
  },
  marketplace: {
    options: ['url', 'verbose', 'help'],
    usage: 'marketplace',
    summary: 'GPU availability and prices (GET /webhook/marketplace, unsigned)',
  },
  task: {
    options: [...CONNECTION, 'wait', 'interval', 'timeout'],
    usage: 'task TASK_ID [--wait]',
    summary: 'show a task record: state, result, timestamps (GET /webhook/tasks/{task_id})',
  },
  verify: {
    options: ['callback-secret', 'id', 'signature', 'timestamp', 'verbose', 'help'],
    usage: 'verify --id WEBHOOK_ID --timestamp WEBHOOK_TIMESTAMP --signature WEBHOOK_SIGNATURE [--callback-secret whsec_...] < body',
    summary: 'check a received callback\'s Standard Webhooks signature (body on stdin, exact bytes)',
  },
  help: { options: ['help'], usage: 'help [COMMAND]', summary: 'show this help' },
};

const HELP = `gpu-relay: signed client of the GPU Order Relay

Usage: gpu-relay <command> [options]

Commands:
${Object.entries(COMMANDS).map(([name, c]) => `  ${name.padEnd(15)} ${c.summary}`).join('\n')}

Connection:
  --url URL               relay base URL (env GPU_RELAY_URL; default ${DEFAULT_URL})
  --secret S              webhook secret (env GPU_RELAY_SECRET, then WEBHOOK_SECRET); prefer the env
  --callback-secret S     callback signing secret, whsec_... (env GPU_RELAY_CALLBACK_SECRET, then
                          CALLBACK_SIGNING_SECRET): verifies callbacks (--wait, verify); never signs requests
  --no-timestamp          sign the body alone, without X-Webhook-Timestamp
  --idempotency-key K     send Idempotency-Key: a repeat within 24 h returns the same task_id
  --verbose               show the request and answer lines on stderr (signature redacted)

Waiting for the result (create-order, cancel-order, extend-order, set-spot-price, price-alert, status, task):
  --wait                  wait for the task's result and print it; exit 1 if the task failed
  --listen-port N         port of the local callback listener (default 0 = any free port)
  --listen-host H         address the listener binds (default 127.0.0.1)
  --public-url URL        URL the relay should call when it cannot reach this machine directly
                          (a tunnel to the listener); the listener path is appended
  --poll                  poll GET /webhook/tasks/{task_id} instead of listening for the callback
  --interval SECONDS      poll period (default 2)
  --timeout SECONDS       give up waiting after this long (default 900)

Exit codes: 0 success, 1 task failed or signature invalid, 2 usage or HTTP error.

Examples:
  export GPU_RELAY_URL=http://127.0.0.1:5000 GPU_RELAY_SECRET=...
  gpu-relay create-order --gpu "RTX 4090" --max-price 0.5 --wait
  gpu-relay cancel-order 12345
  gpu-relay create-order --gpu "RTX 4090" --max-hours 4 --wait
  gpu-relay extend-order 12345 --hours 2
  gpu-relay set-spot-price 12345 --price 1500
  gpu-relay task 6f1c0b1e-...
  printf '%s' "$BODY" | gpu-relay verify --id "$WEBHOOK_ID" --timestamp "$WEBHOOK_TIMESTAMP" --signature "$WEBHOOK_SIGNATURE"
`;

/** A failure that ends the command with `exitCode` and a one-line message. */
class CliError extends Error {
  constructor(message, exitCode = EXIT_USAGE) {
    super(message);
    this.name = 'CliError';
    this.exitCode = exitCode;
  }
}

const usageError = (command, message) =>
  new CliError(`${message}\nUsage: gpu-relay ${COMMANDS[command]?.usage ?? '<command> [options]'}\nRun 'gpu-relay help' for all options.`);

// Every string that leaves the process goes through redact(): the secret must never be printed,
// not even when a user pastes it into the wrong place and an error message echoes it back.
const secretsToHide = [];
const redact = (text) => {
  let out = String(text);
  for (const s of secretsToHide) if (s) out = out.split(s).join('***');
  return out;
};
const out = (text) => process.stdout.write(redact(text) + '\n');
const err = (text) => process.stderr.write(redact(text) + '\n');

const hmacHex = (secret, bytes) => createHmac('sha256', secret).update(bytes).digest('hex');

/** The bytes a signature covers: `data`, or `<timestamp>.<data>` when a timestamp is sent. */
const signedBytes = (data, timestamp) => {
  const raw = Buffer.isBuffer(data) ? data : Buffer.from(data, 'utf8');
  return timestamp === undefined ? raw : Buffer.concat([Buffer.from(`${timestamp}.`, 'utf8'), raw]);
};

/** The callback signing secret: --callback-secret, then GPU_RELAY_CALLBACK_SECRET, then CALLBACK_SIGNING_SECRET. */
const callbackSecretOf = (values) => {
  const secret = values['callback-secret'] ?? process.env.GPU_RELAY_CALLBACK_SECRET ?? process.env.CALLBACK_SIGNING_SECRET;
  hideCallbackSecret(secret);
  return secret;
};

/** Hides a callback secret in output with and without its whsec_ prefix (the key is the base64 part). */
const hideCallbackSecret = (secret) => {
  if (!secret) return;
  secretsToHide.push(secret);
  if (secret.startsWith('whsec_') && secret.length > 'whsec_'.length) secretsToHide.push(secret.slice('whsec_'.length));
};

/** A Standard Webhooks verifier for `secret`, or a usage error naming the fix (never the value). */
const callbackVerifier = (command, secret) => {
  if (!secret) {
    throw usageError(command, 'no callback signing secret: set GPU_RELAY_CALLBACK_SECRET (the relay\'s CALLBACK_SIGNING_SECRET, whsec_...) or pass --callback-secret');
  }
  try {
    return new Webhook(secret.trim());
  } catch {
    throw usageError(command, 'the callback signing secret must be whsec_ followed by base64');
  }
};

/**
 * Why a delivery does not verify (standardwebhooks: signature over `<id>.<timestamp>.<body>`, timestamp
 * within 5 minutes of now), or null when it does.
 */
const deliveryProblem = (verifier, headers, body) => {
  try {
    verifier.verify(body, headers, { jsonParse: false });
    return null;
  } catch (error) {
    const message = String(error?.message ?? error);
    if (/headers/i.test(message)) return 'missing webhook-id, webhook-timestamp or webhook-signature';
    if (/too old|too new/i.test(message)) return `timestamp is more than ${REPLAY_WINDOW_SECONDS} s from now (replay?)`;
    return 'signature does not match';
  }
};

const parsePositiveNumber = (command, flag, raw) => {
  const value = Number(raw);
  if (raw === undefined || raw.trim() === '' || !Number.isFinite(value) || value <= 0) {
    throw usageError(command, `--${flag} must be a positive number, got '${raw}'`);
  }
  return value;
};

/** Lease hours: a number above 0 and at most 720 (30 days), fractions allowed; the relay checks the same. */
const parseHours = (command, flag, raw) => {
  const value = parsePositiveNumber(command, flag, raw);
  if (value > 720) throw usageError(command, `--${flag} must be at most 720 hours, got '${raw}'`);
  return value;
};

/** The one ORDER_ID positional of the order commands. */
const parseOrderId = (command, positionals) => {
  if (positionals.length !== 1) throw usageError(command, 'expected exactly one ORDER_ID');
  const id = positionals[0];
  if (!/^\d{1,15}$/.test(id) || Number(id) <= 0) throw usageError(command, `ORDER_ID must be a positive integer, got '${id}'`);
  return Number(id);
};

const parseSeconds = (command, flag, raw, fallback) => (raw === undefined ? fallback : parsePositiveNumber(command, flag, raw));

const parseUrl = (command, flag, raw) => {
  let url;
  try {
    url = new URL(raw);
  } catch {
    throw usageError(command, `${flag} must be an absolute http(s) URL, got '${raw}'`);
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:') {
    throw usageError(command, `${flag} must be an http(s) URL, got '${raw}'`);
  }
  return url;
};

/** Parses argv into { command, values, positionals }; throws CliError (exit 2) on bad flags. */
const parseCommandLine = (argv) => {
  let parsed;
  try {
    parsed = parseArgs({ args: argv, options: OPTIONS, allowPositionals: true, strict: true });
  } catch (error) {
    const message = String(error.message).split('\n')[0].replace(/\. To specify a positional.*$/, '');
    throw usageError(argv.find((a) => !a.startsWith('-')), message);
  }
  const [command, ...rest] = parsed.positionals;
  if (!command) {
    if (parsed.values.help) return { command: 'help', values: {}, positionals: [] };
    throw new CliError(`missing command. Commands: ${Object.keys(COMMANDS).join(', ')}. Run 'gpu-relay help' for details.`);
  }
  const spec = COMMANDS[command];
  if (!spec) throw new CliError(`unknown command '${command}'. Commands: ${Object.keys(COMMANDS).join(', ')}`);
  for (const name of Object.keys(parsed.values)) {
    if (!spec.options.includes(name)) throw usageError(command, `${command} does not take --${name}`);
  }
  return { command, values: parsed.values, positionals: rest };
};

const settings = (command, values) => {
  const env = process.env;
  const secret = values.secret ?? env.GPU_RELAY_SECRET ?? env.WEBHOOK_SECRET;
  if (secret) secretsToHide.push(secret);
  const rawUrl = values.url ?? env.GPU_RELAY_URL ?? DEFAULT_URL;
  const base = parseUrl(command, values.url ? '--url' : 'GPU_RELAY_URL', rawUrl);
  return { secret, base, timestamped: !values['no-timestamp'], verbose: Boolean(values.verbose) };
};

const requireSecret = (command, secret) => {
  if (!secret) {
    throw usageError(command, 'no webhook secret: set GPU_RELAY_SECRET (or WEBHOOK_SECRET) or pass --secret');
  }
  return secret;
};

/** Builds the request body of a task-starting command from its flags. */
const buildBody = (command, values, positionals) => {
  const body = {};
  switch (command) {
    case 'create-order':
      if (positionals.length) throw usageError(command, `unexpected argument '${positionals[0]}'`);
      if (!values.gpu?.trim()) throw usageError(command, '--gpu is required (e.g. --gpu "RTX 4090")');
      body.gpu_type = values.gpu;
      if (values['max-price'] !== undefined) body.max_price = parsePositiveNumber(command, 'max-price', values['max-price']);
      if (values['max-hours'] !== undefined) body.max_hours = parseHours(command, 'max-hours', values['max-hours']);
      if (values.image !== undefined) body.image = values.image;
      if (values['on-demand']) body.use_spot = false;
      for (const pair of values.env ?? []) {
        const match = /^([A-Za-z_][A-Za-z0-9_]*)=(.*)$/s.exec(pair);
        if (!match) throw usageError(command, `--env takes NAME=VALUE, got '${pair}'`);
        // The relay refuses it too (400): the production marketplace fails any order whose env holds `&`.
        if (match[2].includes('&')) throw usageError(command, `env values must not contain "&" (--env ${match[1]})`);
        (body.env ??= {})[match[1]] = match[2];
      }
      break;
    case 'cancel-order':
      body.order_id = parseOrderId(command, positionals);
      break;
    case 'extend-order':
      body.order_id = parseOrderId(command, positionals);
      if (values.hours === undefined) throw usageError(command, '--hours is required');
      body.hours = parseHours(command, 'hours', values.hours);
      break;
    case 'set-spot-price':
      body.order_id = parseOrderId(command, positionals);
      if (values.price === undefined) throw usageError(command, '--price is required (the new bid in the order\'s currency per day, the marketplace\'s unit; not USD per hour)');
      body.desired_price = parsePositiveNumber(command, 'price', values.price);
      break;
    case 'price-alert':
      if (positionals.length) throw usageError(command, `unexpected argument '${positionals[0]}'`);
      if (!values.gpu?.trim()) throw usageError(command, '--gpu is required');
      if (values.target === undefined) throw usageError(command, '--target is required (USD per hour)');
      body.gpu_type = values.gpu;
      body.target_price = parsePositiveNumber(command, 'target', values.target);
      if (values.image !== undefined) body.image = values.image;
      break;
    case 'status':
      if (positionals.length) throw usageError(command, `unexpected argument '${positionals[0]}'`);
      break;
    default:
      throw new CliError(`no body for ${command}`);
  }
  if (values.callback !== undefined) body.callback_url = parseUrl(command, '--callback', values.callback).toString();
  return body;
};

const routeUrl = (base, path) => new URL(base.pathname.replace(/\/+$/, '') + path, base);

/**
 * Sends one request. `signed` requests carry X-Webhook-Signature over the exact body bytes, or over the
 * path and query string when there is no body, prefixed by `<timestamp>.` unless --no-timestamp.
 */
const send = async (conn, { method, path, body, signed, idempotencyKey }) => {
  const url = routeUrl(conn.base, path);
  const bytes = body === undefined ? undefined : Buffer.from(body, 'utf8');
  const headers = { accept: 'application/json', 'user-agent': 'gpu-relay-cli/1' };
  if (bytes) headers['content-type'] = 'application/json';
  if (signed) {
    const timestamp = conn.timestamped ? String(Math.floor(Date.now() / 1000)) : undefined;
    const covered = bytes ?? Buffer.from(url.pathname + url.search, 'utf8');
    if (timestamp) headers['x-webhook-timestamp'] = timestamp;
    headers['x-webhook-signature'] = hmacHex(conn.secret, signedBytes(covered, timestamp));
  }
  if (idempotencyKey) headers['idempotency-key'] = idempotencyKey;
  if (conn.verbose) {
    err(`> ${method} ${url}`);
    for (const [k, v] of Object.entries(headers)) err(`> ${k}: ${k === 'x-webhook-signature' ? '<redacted>' : v}`);
    if (bytes) err(`> ${body}`);
  }
  let res;
  try {
    res = await fetch(url, { method, headers, body: bytes, redirect: 'manual', signal: AbortSignal.timeout(REQUEST_TIMEOUT_MS) });
  } catch (error) {
    const cause = error.cause?.code ?? error.cause?.message ?? error.message;
    throw new CliError(`cannot reach the relay at ${conn.base.origin}: ${cause}`);
  }
  const text = await res.text();
  if (conn.verbose) err(`< HTTP ${res.status}`);
  let json;
  try {
    json = text ? JSON.parse(text) : undefined;
  } catch {
    json = undefined;
  }
  return { status: res.status, headers: res.headers, text, json };
};

const pretty = (value) => JSON.stringify(value, null, 2);

/** Prints the answer; a non-2xx answer becomes a CliError (exit 2) naming status and error. */
const printAnswer = (command, res, { quietBody = false } = {}) => {
  if (res.status >= 200 && res.status < 300) {
    if (!quietBody) out(res.json === undefined ? res.text : pretty(res.json));
    return;
  }
  if (res.text) out(res.json === undefined ? res.text : pretty(res.json));
  const reason = typeof res.json?.error === 'string' ? res.json.error : res.text.slice(0, 200) || 'no body';
  const retry = res.status === 429 && res.headers.get('retry-after') ? ` (retry after ${res.headers.get('retry-after')} s)` : '';
  throw new CliError(`${command} failed: HTTP ${res.status}: ${reason}${retry}`);
};

const isFailedResult = (result) =>
  result === null || typeof result !== 'object' || result.success === false || 'error' in result;

/** Writes a progress line on stderr: rewritten in place on a terminal, one line per tick otherwise. */
const progress = (() => {
  let last = '';
  return {
    show(text) {
      if (process.stderr.isTTY) process.stderr.write(`\r\x1b[2K${redact(text)}`);
      else err(text);
      last = text;
    },
    done() {
      if (process.stderr.isTTY && last) process.stderr.write('\n');
      last = '';
    },
  };
})();

const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));

/**
 * A local listener for the task's signed callback. The path carries a random nonce so only the relay
 * (which got it in callback_url) can find it; the signature and timestamp are checked as a receiver must.
 */
const startCallbackListener = async (conn, { host, port, publicUrl, verifier }) => {
  const nonce = randomBytes(12).toString('hex');
  const path = `/gpu-relay/callback/${nonce}`;
  const received = [];
  const seenIds = new Set();
  let notify = () => {};

  const server = createServer((req, res) => {
    const reply = (status, body) => {
      res.writeHead(status, { 'content-type': 'application/json' });
      res.end(JSON.stringify(body));
    };
    if (req.method !== 'POST' || req.url !== path) return reply(404, { error: 'Not found' });
    const chunks = [];
    let size = 0;
    req.on('data', (chunk) => {
      size += chunk.length;
      if (size > MAX_CALLBACK_BYTES) req.destroy();
      else chunks.push(chunk);
    });
    req.on('end', () => {
      const raw = Buffer.concat(chunks);
      const id = req.headers['webhook-id'];
      // Standard Webhooks: webhook-id, webhook-timestamp, webhook-signature over the raw bytes.
      const problem = deliveryProblem(verifier, req.headers, raw);
      if (problem) {
        err(`warning: ignored a callback: ${problem}`);
        return reply(401, { error: problem });
      }
      // A retried delivery repeats webhook-id: acknowledge it, but count it once.
      if (typeof id === 'string' && seenIds.has(id)) return reply(200, { ok: true, duplicate: true });
      if (typeof id === 'string') seenIds.add(id);
      let json;
      try {
        json = JSON.parse(raw.toString('utf8'));
      } catch {
        err('warning: ignored a signed callback whose body is not JSON');
        return reply(400, { error: 'Body is not JSON' });
      }
      reply(200, { ok: true });
      received.push({ id, body: json });
      notify();
    });
  });

  await new Promise((resolve, reject) => {
    server.once('error', (error) => reject(new CliError(`cannot listen on ${host}:${port}: ${error.code ?? error.message}`)));
    server.listen(port, host, resolve);
  });
  const actual = server.address().port;
  const reachable = publicUrl
    ? `${publicUrl.toString().replace(/\/+$/, '')}${path}`
    : `http://${host.includes(':') ? `[${host}]` : host}:${actual}${path}`;

  return {
    callbackUrl: reachable,
    /**
     * Resolves with the first verified callback. The path is unique to this run, so the first one is
     * this task's result (a matched price alert's own result arrives before the order it queued).
     */
    next() {
      return new Promise((resolve) => {
        const check = () => {
          if (received.length > 0) resolve(received[0].body);
        };
        notify = check;
        check();
      });
    },
    close: () =>
      new Promise((resolve) => {
        server.closeAllConnections?.();
        server.close(() => resolve());
      }),
  };
};

/** Races `promise` against the --timeout and prints a progress line every few seconds meanwhile. */
const waitWithProgress = async (promise, { timeoutMs, label }) => {
  const started = Date.now();
  let timer;
  const tick = () => progress.show(`${label()} (${Math.round((Date.now() - started) / 1000)} s)`);
  tick();
  const ticker = setInterval(tick, process.stderr.isTTY ? 1000 : 5000);
  const timeout = new Promise((_, reject) => {
    timer = setTimeout(
      () => reject(new CliError(`timed out after ${Math.round(timeoutMs / 1000)} s waiting for the result`, EXIT_TASK_FAILED)),
      timeoutMs,
    );
  });
  try {
    return await Promise.race([promise, timeout]);
  } finally {
    clearInterval(ticker);
    clearTimeout(timer);
    progress.done();
  }
};

const getTask = async (conn, taskId, command = 'task') => {
  const res = await send(conn, { method: 'GET', path: `/webhook/tasks/${encodeURIComponent(taskId)}`, signed: true });
  if (res.status !== 200) printAnswer(command, res);
  return res.json;
};

/** Polls the task record until it reaches a final state; resolves with the record. */
const pollTask = (conn, taskId, intervalMs, state) =>
  (async () => {
    for (;;) {
      const record = await getTask(conn, taskId);
      state.current = record?.state ?? 'unknown';
      if (record?.state === 'succeeded' || record?.state === 'failed') return record;
      await sleep(intervalMs);
    }
  })();

const finishWithResult = (result, failed) => {
  out(pretty(result));
  return failed ? EXIT_TASK_FAILED : EXIT_OK;
};

const runTaskCommand = async (command, values, positionals) => {
  const conn = settings(command, values);
  requireSecret(command, conn.secret);
  const body = buildBody(command, values, positionals);
  const path = `/webhook/${command}`;
  const waitOpts = {
    timeoutMs: parseSeconds(command, 'timeout', values.timeout, 900) * 1000,
    intervalMs: parseSeconds(command, 'interval', values.interval, 2) * 1000,
  };
  for (const flag of ['poll', 'interval', 'timeout', 'listen-port', 'listen-host', 'public-url']) {
    if (values[flag] !== undefined && !values.wait) throw usageError(command, `--${flag} only makes sense with --wait`);
  }
  const listen = values.wait && !values.poll;
  if (listen && values.callback !== undefined) {
    throw usageError(command, '--wait sets callback_url to its own listener; drop --callback, or add --poll to keep yours');
  }
  if (!listen && ['listen-port', 'listen-host', 'public-url', 'callback-secret'].some((f) => values[f] !== undefined)) {
    throw usageError(command, '--listen-port, --listen-host, --public-url and --callback-secret need --wait without --poll');
  }

  let listener;
  if (listen) {
    const port = values['listen-port'] === undefined ? 0 : Number(values['listen-port']);
    if (!Number.isInteger(port) || port < 0 || port > 65535) {
      throw usageError(command, `--listen-port must be a port number, got '${values['listen-port']}'`);
    }
    const publicUrl = values['public-url'] === undefined ? undefined : parseUrl(command, '--public-url', values['public-url']);
    // The listener starts before the request: a fast task may call back before the 202 arrives.
    // Checked before anything is sent: without the callback signing secret no callback could be trusted.
    const verifier = callbackVerifier(command, callbackSecretOf(values));
    listener = await startCallbackListener(conn, { host: values['listen-host'] ?? '127.0.0.1', port, publicUrl, verifier });
    body.callback_url = listener.callbackUrl;
  }
  try {
    const res = await send(conn, {
      method: 'POST', path, body: JSON.stringify(body), signed: true, idempotencyKey: values['idempotency-key'],
    });
    printAnswer(command, res, { quietBody: Boolean(values.wait) });
    if (!values.wait) return EXIT_OK;
    const taskId = res.json?.task_id;
    if (typeof taskId !== 'string') throw new CliError(`${command}: the relay's answer has no task_id`);
    err(`queued task ${taskId}`);

    if (listener) {
      const result = await waitWithProgress(listener.next(), {
        timeoutMs: waitOpts.timeoutMs,
        label: () => `waiting for task ${taskId} result on ${listener.callbackUrl.replace(/callback\/.*/, 'callback/…')}`,
      });
      return finishWithResult(result, isFailedResult(result));
    }
    const state = { current: 'queued' };
    const record = await waitWithProgress(pollTask(conn, taskId, waitOpts.intervalMs, state), {
      timeoutMs: waitOpts.timeoutMs,
      label: () => `waiting for task ${taskId}: ${state.current}`,
    });
    return finishWithResult(record.result ?? record, record.state === 'failed' || isFailedResult(record.result));
  } finally {
    await listener?.close();
  }
};

const runMarketplace = async (values, positionals) => {
  if (positionals.length) throw usageError('marketplace', `unexpected argument '${positionals[0]}'`);
  const conn = settings('marketplace', values);
  printAnswer('marketplace', await send(conn, { method: 'GET', path: '/webhook/marketplace', signed: false }));
  return EXIT_OK;
};

const runTask = async (values, positionals) => {
  if (positionals.length !== 1) throw usageError('task', 'expected exactly one TASK_ID');
  const conn = settings('task', values);
  requireSecret('task', conn.secret);
  const [taskId] = positionals;
  if (!/^[A-Za-z0-9_.:-]{1,128}$/.test(taskId)) throw usageError('task', `TASK_ID looks wrong: '${taskId}'`);
  if (!values.wait) {
    for (const flag of ['interval', 'timeout']) if (values[flag] !== undefined) throw usageError('task', `--${flag} only makes sense with --wait`);
    out(pretty(await getTask(conn, taskId)));
    return EXIT_OK;
  }
  const state = { current: 'unknown' };
  const record = await waitWithProgress(
    pollTask(conn, taskId, parseSeconds('task', 'interval', values.interval, 2) * 1000, state),
    { timeoutMs: parseSeconds('task', 'timeout', values.timeout, 900) * 1000, label: () => `waiting for task ${taskId}: ${state.current}` },
  );
  out(pretty(record));
  return record.state === 'failed' || isFailedResult(record.result) ? EXIT_TASK_FAILED : EXIT_OK;
};

const readStdin = async () => {
  if (process.stdin.isTTY) throw usageError('verify', 'pipe the exact callback body on stdin');
  const chunks = [];
  for await (const chunk of process.stdin) chunks.push(chunk);
  return Buffer.concat(chunks);
};

const runVerify = async (values, positionals) => {
  if (positionals.length) throw usageError('verify', `unexpected argument '${positionals[0]}'`);
  const verifier = callbackVerifier('verify', callbackSecretOf(values));
  for (const [flag, header] of [['id', 'webhook-id'], ['timestamp', 'webhook-timestamp'], ['signature', 'webhook-signature']]) {
    if (!values[flag]) throw usageError('verify', `--${flag} is required (the ${header} header)`);
  }
  if (!/^\d{1,12}$/.test(values.timestamp)) throw usageError('verify', `--timestamp must be Unix seconds, got '${values.timestamp}'`);
  const body = await readStdin();

  const verdict = (valid, reason) => {
    out(pretty(valid ? { valid: true } : { valid: false, reason }));
    return valid ? EXIT_OK : EXIT_TASK_FAILED;
  };
  const headers = { 'webhook-id': values.id, 'webhook-timestamp': values.timestamp, 'webhook-signature': values.signature.trim() };
  const problem = deliveryProblem(verifier, headers, body);
  if (problem === 'signature does not match' && body.length && body[body.length - 1] === 0x0a) {
    return verdict(false, `${problem}; the body ends with a newline: pass the exact bytes (printf '%s', not echo)`);
  }
  return verdict(problem === null, problem ?? undefined);
};

/** Registers every secret the process could know before anything can echo it (even a bad flag). */
const hideKnownSecrets = (argv) => {
  secretsToHide.push(process.env.GPU_RELAY_SECRET, process.env.WEBHOOK_SECRET);
  hideCallbackSecret(process.env.GPU_RELAY_CALLBACK_SECRET);
  hideCallbackSecret(process.env.CALLBACK_SIGNING_SECRET);
  argv.forEach((arg, i) => {
    if (arg === '--secret') secretsToHide.push(argv[i + 1]);
    else if (arg.startsWith('--secret=')) secretsToHide.push(arg.slice('--secret='.length));
    else if (arg === '--callback-secret') hideCallbackSecret(argv[i + 1]);
    else if (arg.startsWith('--callback-secret=')) hideCallbackSecret(arg.slice('--callback-secret='.length));
  });
};

const main = async (argv) => {
  hideKnownSecrets(argv);
  const { command, values, positionals } = parseCommandLine(argv);
  if (command === 'help' || values.help) {
    const topic = command === 'help' ? positionals[0] : command;
    if (topic && COMMANDS[topic] && topic !== 'help') out(`Usage: gpu-relay ${COMMANDS[topic].usage}\n\n${COMMANDS[topic].summary}\n\n${HELP.slice(HELP.indexOf('Connection:'))}`);
    else if (topic && !COMMANDS[topic]) throw new CliError(`unknown command '${topic}'`);
    else out(HELP);
    return EXIT_OK;
  }
  switch (command) {
    case 'marketplace':
      return runMarketplace(values, positionals);
    case 'task':
      return runTask(values, positionals);
    case 'verify':
      return runVerify(values, positionals);
    default:
      return runTaskCommand(command, values, positionals);
  }
};

const exit = (code) => {
  // Let piped stdout/stderr drain before exiting.
  process.stdout.write('', () => process.stderr.write('', () => process.exit(code)));
};

process.on('SIGINT', () => {
  progress.done();
  err('interrupted');
  exit(130);
});

main(process.argv.slice(2)).then(exit, (error) => {
  progress.done();
  if (error instanceof CliError) {
    err(`gpu-relay: ${error.message}`);
    exit(error.exitCode);
  } else {
    err(`gpu-relay: unexpected error: ${error?.message ?? error}`);
    exit(EXIT_USAGE);
  }
});
