/**
 * One signed request to the relay (the relay's check: lambdas/domain/signing.ts). Signature v2 (the
 * default): `X-Webhook-Signature: v2=<hex>`, HMAC-SHA256 over `v2.<timestamp>.<METHOD>.<path with
 * query>.<body>` (empty body for a GET). With --signature v1 (old relays): lowercase hex over the exact
 * body bytes sent, or over the path and query string when there is no body, prefixed by
 * `<timestamp>.` unless --no-timestamp.
 */
import { createHmac } from 'node:crypto';
import type { Connection } from './connection';
import type { Answer } from './output';
import { CliError, err } from './output';

const REQUEST_TIMEOUT_MS = 30_000;

export const hmacHex = (secret: string, bytes: Buffer): string =>
  createHmac('sha256', secret).update(bytes).digest('hex');

/** The bytes a signature covers: `data`, or `<timestamp>.<data>` when a timestamp is sent. */
export const signedBytes = (data: Buffer | string, timestamp: string | undefined): Buffer => {
  const raw = Buffer.isBuffer(data) ? data : Buffer.from(data, 'utf8');
  return timestamp === undefined ? raw : Buffer.concat([Buffer.from(`${timestamp}.`, 'utf8'), raw]);
};

/** The bytes a v2 signature covers: `v2.<timestamp>.<METHOD>.<pathWithQuery>.<body>`. */
export const signedBytesV2 = (timestamp: string, method: string, pathWithQuery: string, body?: Buffer): Buffer =>
  Buffer.concat([Buffer.from(`v2.${timestamp}.${method}.${pathWithQuery}.`, 'utf8'), body ?? Buffer.alloc(0)]);

const routeUrl = (base: URL, path: string): URL => new URL(base.pathname.replace(/\/+$/, '') + path, base);

export interface Request {
  readonly method: 'GET' | 'POST' | 'PUT';
  readonly path: string;
  readonly body?: string;
  readonly signed: boolean;
  readonly idempotencyKey?: string;
}

/** Sends one request and reads the whole answer; a network failure is a CliError (exit 2). */
export const send = async (
  conn: Connection,
  { method, path, body, signed, idempotencyKey }: Request,
): Promise<Answer> => {
  const url = routeUrl(conn.base, path);
  const bytes = body === undefined ? undefined : Buffer.from(body, 'utf8');
  const headers: Record<string, string> = { accept: 'application/json', 'user-agent': 'gpu-relay-cli/1' };
  if (bytes) headers['content-type'] = 'application/json';
  if (signed && conn.signature === 'v2') {
    const timestamp = String(Math.floor(Date.now() / 1000));
    headers['x-webhook-timestamp'] = timestamp;
    const covered = signedBytesV2(timestamp, method, url.pathname + url.search, method === 'GET' ? undefined : bytes);
    headers['x-webhook-signature'] = `v2=${hmacHex(conn.secret ?? '', covered)}`;
    if (conn.keyId) headers['x-webhook-key-id'] = conn.keyId;
  } else if (signed) {
    const timestamp = conn.timestamped ? String(Math.floor(Date.now() / 1000)) : undefined;
    const covered = bytes ?? Buffer.from(url.pathname + url.search, 'utf8');
    if (timestamp) headers['x-webhook-timestamp'] = timestamp;
    headers['x-webhook-signature'] = hmacHex(conn.secret ?? '', signedBytes(covered, timestamp));
    if (conn.keyId) headers['x-webhook-key-id'] = conn.keyId;
  }
  if (idempotencyKey) headers['idempotency-key'] = idempotencyKey;
  if (conn.verbose) {
    err(`> ${method} ${url}`);
    for (const [k, v] of Object.entries(headers)) err(`> ${k}: ${k === 'x-webhook-signature' ? '<redacted>' : v}`);
    if (bytes) err(`> ${body}`);
  }
  let res: Response;
  try {
    res = await fetch(url, {
      method,
      headers,
      body: bytes,
      redirect: 'manual',
      signal: AbortSignal.timeout(REQUEST_TIMEOUT_MS),
    });
  } catch (error) {
    const e = error as { message?: string; cause?: { code?: string; message?: string } };
    const cause = e.cause?.code ?? e.cause?.message ?? e.message;
    throw new CliError(`cannot reach the relay at ${conn.base.origin}: ${cause}`);
  }
  const text = await res.text();
  if (conn.verbose) err(`< HTTP ${res.status}`);
  let json: unknown;
  try {
    json = text ? JSON.parse(text) : undefined;
  } catch {
    json = undefined;
  }
  return { status: res.status, headers: res.headers, text, json };
};
