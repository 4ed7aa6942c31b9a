/**
 * The outbound POST used for callbacks and chat webhooks, on Node's own http/https (no HTTP client
 * library in the bundle). The SSRF guard is applied at connect time: literal IP hosts are judged
 * before connecting, host names through the socket's `lookup`, so every address actually dialled
 * has passed the policy (DNS-rebinding safe). Redirects are never followed.
 */
import { request as httpRequest, type IncomingHttpHeaders } from 'node:http';
import { request as httpsRequest } from 'node:https';
import { BlockedDestinationError, DeliveryTimeoutError } from '../domain/errors';
import { connectLookup, refusedLiteralHost, type Resolver } from './ssrf-guard';

/** How much of a response body is kept; the rest is discarded (we only ever read small JSON errors). */
export const MAX_RESPONSE_BYTES = 64 * 1024;

export interface PostOptions {
  readonly headers?: Readonly<Record<string, string>>;
  readonly body: string;
  /** Total time for connect, request, response headers and body; the request is destroyed after it. */
  readonly timeoutMs: number;
  /** Skip the address policy (local runtime, tests). Non-http(s) URLs are refused regardless. */
  readonly allowPrivate: boolean;
  /** DNS override, `dns.lookup`-shaped (tests map names to a local receiver). @default node:dns lookup */
  readonly lookup?: Resolver;
  /** @default MAX_RESPONSE_BYTES */
  readonly maxResponseBytes?: number;
}

export interface PostResponse {
  readonly status: number;
  /** Lower-cased names, as Node parses them. */
  readonly headers: IncomingHttpHeaders;
  /** The body as UTF-8, at most `maxResponseBytes` of it. */
  text(): string;
}

/**
 * One POST. Resolves with any HTTP status (3xx included: never followed); rejects with
 * BlockedDestinationError for a refused destination, DeliveryTimeoutError after `timeoutMs`, or the
 * socket's error (ECONNREFUSED, ECONNRESET...).
 */
export type Transport = (url: string, options: PostOptions) => Promise<PostResponse>;

/** The Transport over node:http / node:https. */
export const httpPost: Transport = (url, options) =>
  new Promise<PostResponse>((resolve, reject) => {
    let target: URL;
    try {
      target = new URL(url);
    } catch {
      reject(new BlockedDestinationError('not an absolute URL'));
      return;
    }
    if (target.protocol !== 'http:' && target.protocol !== 'https:') {
      reject(new BlockedDestinationError(`protocol ${target.protocol} is not allowed`));
      return;
    }
    const refused = options.allowPrivate ? undefined : refusedLiteralHost(target.hostname);
    if (refused) {
      reject(refused);
      return;
    }

    const limit = options.maxResponseBytes ?? MAX_RESPONSE_BYTES;
    const payload = Buffer.from(options.body, 'utf8');
    const lookup = connectLookup(options.allowPrivate, options.lookup);
    let settled = false;
    // Called only from I/O callbacks, which run after `timer` below is set.
    const settle = (done: () => void) => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      done();
    };

    const send = target.protocol === 'https:' ? httpsRequest : httpRequest;
    let req: ReturnType<typeof httpRequest>;
    try {
      req = send(
        target,
        {
          method: 'POST',
          // Content-Length rather than chunked: some webhook receivers reject chunked bodies.
          headers: { ...options.headers, 'Content-Length': String(payload.length) },
          // A fresh socket per POST: each connection is judged by the guard, no idle socket goes stale
          // across a Lambda freeze, and a socket opened without the guard can never be reused with it.
          agent: false,
          ...(lookup ? { lookup } : {}),
        },
        (res) => {
          const chunks: Buffer[] = [];
          let size = 0;
          const complete = () =>
            settle(() =>
              resolve({
                status: res.statusCode ?? 0,
                headers: res.headers,
                text: () => Buffer.concat(chunks).toString('utf8'),
              }),
            );
          res.on('data', (chunk: Buffer) => {
            if (size < limit) {
              const kept = chunk.subarray(0, limit - size);
              chunks.push(kept);
              size += kept.length;
            }
            if (size >= limit) {
              complete();
              res.destroy(); // the rest is discarded; the socket is ours alone (agent: false)
            }
          });
          res.on('end', complete);
          // A timeout or reset mid-body arrives here (req.destroy after the response began).
          res.on('error', (error) => settle(() => reject(error)));
          res.on('close', () =>
            settle(() => reject(Object.assign(new Error('response closed before its end'), { code: 'ECONNRESET' }))),
          );
        },
      );
    } catch (error) {
      reject(error); // invalid header values throw synchronously
      return;
    }
    const timer = setTimeout(() => req.destroy(new DeliveryTimeoutError(options.timeoutMs)), options.timeoutMs);
    req.on('error', (error) => settle(() => reject(error)));
    req.end(payload);
  });
