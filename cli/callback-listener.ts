/**
 * Receiving the task's result: a local listener for the relay's callback, verified per Standard
 * Webhooks with the callback signing secret (the package's `standardwebhooks`, not hand-written code).
 */
import { randomBytes } from 'node:crypto';
import { createServer } from 'node:http';
import type { IncomingHttpHeaders } from 'node:http';
import type { AddressInfo } from 'node:net';
import { Webhook } from 'standardwebhooks';
import type { Values } from './args';
import { usageError } from './commands';
import { CliError, err, hideCallbackSecret } from './output';

/** Same window the relay applies to timestamped requests (lambdas/domain/signing.ts). */
const REPLAY_WINDOW_SECONDS = 300;
const MAX_CALLBACK_BYTES = 1024 * 1024;

/**
 * The callback signing secret: --callback-secret, then GPU_RELAY_CALLBACK_SECRET, then
 * CALLBACK_SIGNING_SECRET, then the local relay's (when its card chose the connection).
 */
export const callbackSecretOf = (values: Values, localSecret?: string): string | undefined => {
  const secret =
    values['callback-secret'] ??
    process.env.GPU_RELAY_CALLBACK_SECRET ??
    process.env.CALLBACK_SIGNING_SECRET ??
    localSecret;
  hideCallbackSecret(secret);
  return secret;
};

/** A Standard Webhooks verifier for `secret`, or a usage error naming the fix (never the value). */
export const callbackVerifier = (command: string, secret: string | undefined): Webhook => {
  if (!secret) {
    throw usageError(
      command,
      "no callback signing secret: set GPU_RELAY_CALLBACK_SECRET (the relay's CALLBACK_SIGNING_SECRET, whsec_...) or pass --callback-secret",
    );
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
export const deliveryProblem = (
  verifier: Webhook,
  headers: IncomingHttpHeaders | Record<string, string>,
  body: Buffer,
): string | null => {
  try {
    verifier.verify(body, headers as Record<string, string>, { jsonParse: false });
    return null;
  } catch (error) {
    const message = String((error as Error)?.message ?? error);
    if (/headers/i.test(message)) return 'missing webhook-id, webhook-timestamp or webhook-signature';
    if (/too old|too new/i.test(message)) return `timestamp is more than ${REPLAY_WINDOW_SECONDS} s from now (replay?)`;
    return 'signature does not match';
  }
};

export interface CallbackListener {
  readonly callbackUrl: string;
  /**
   * Resolves with the first verified callback. The path is unique to this run, so the first one is
   * this task's result (a matched price alert's own result arrives before the order it queued).
   */
  next(): Promise<unknown>;
  close(): Promise<void>;
}

/**
 * A local listener for the task's signed callback. The path carries a random nonce so only the relay
 * (which got it in callback_url) can find it; the signature and timestamp are checked as a receiver must.
 */
export const startCallbackListener = async ({
  host,
  port,
  publicUrl,
  verifier,
}: {
  host: string;
  port: number;
  publicUrl?: URL;
  verifier: Webhook;
}): Promise<CallbackListener> => {
  const nonce = randomBytes(12).toString('hex');
  const path = `/gpu-relay/callback/${nonce}`;
  const received: { id: unknown; body: unknown }[] = [];
  const seenIds = new Set<string>();
  let notify = (): void => undefined;

  const server = createServer((req, res) => {
    const reply = (status: number, body: unknown): void => {
      res.writeHead(status, { 'content-type': 'application/json' });
      res.end(JSON.stringify(body));
    };
    if (req.method !== 'POST' || req.url !== path) return reply(404, { error: 'Not found' });
    const chunks: Buffer[] = [];
    let size = 0;
    req.on('data', (chunk: Buffer) => {
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
      let json: unknown;
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

  await new Promise<void>((resolve, reject) => {
    server.once('error', (error: NodeJS.ErrnoException) =>
      reject(new CliError(`cannot listen on ${host}:${port}: ${error.code ?? error.message}`)),
    );
    server.listen(port, host, resolve);
  });
  const actual = (server.address() as AddressInfo).port;
  const reachable = publicUrl
    ? `${publicUrl.toString().replace(/\/+$/, '')}${path}`
    : `http://${host.includes(':') ? `[${host}]` : host}:${actual}${path}`;

  return {
    callbackUrl: reachable,
    next() {
      return new Promise((resolve) => {
        const check = (): void => {
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
