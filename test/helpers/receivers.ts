/**
 * Real HTTP receivers for e2e and workflow tests: stand-ins for a caller's callback_url and for the
 * Slack and Discord incoming webhooks. They record every request and can be told to fail or stall.
 */
import { createServer } from 'node:http';
import type { IncomingHttpHeaders } from 'node:http';
import type { AddressInfo } from 'node:net';
import { Webhook } from 'standardwebhooks';
import { hmacHex, signatureV2 } from '../../lambdas/domain/signing';

/**
 * The callback signing secret (Standard Webhooks, `whsec_` + base64 of 32 bytes) of every test runtime
 * and harness. Deliveries are signed with it; requests never are (they use the webhook secret).
 */
export const TEST_CALLBACK_SECRET = `whsec_${Buffer.from('e2e-test-callback-signing-key-32').toString('base64')}`;

/**
 * Whether a delivery's Standard Webhooks signature (webhook-id, webhook-timestamp, webhook-signature)
 * verifies with `secret`, checked by the standardwebhooks package over the raw body.
 */
export const deliveryVerifies = (
  req: { readonly headers: IncomingHttpHeaders; readonly body: string },
  secret = TEST_CALLBACK_SECRET,
): boolean => {
  const headers = Object.fromEntries(
    Object.entries(req.headers).filter((e): e is [string, string] => typeof e[1] === 'string'),
  );
  try {
    new Webhook(secret).verify(req.body, headers, { jsonParse: false });
    return true;
  } catch {
    return false;
  }
};

export interface ReceivedRequest {
  readonly method: string;
  /** Path with query string. */
  readonly path: string;
  readonly headers: IncomingHttpHeaders;
  readonly body: string;
  /** The parsed JSON body, or undefined when it is not JSON. */
  readonly json: unknown;
}

export interface ReceiverBehaviour {
  /** Status to answer with. @default 200 */
  readonly status?: number;
  /** Hold each answer this long (to exercise the sender's timeout). @default 0 */
  readonly delayMs?: number;
}

export interface Receiver {
  /** Base URL, e.g. `http://127.0.0.1:41234`; post to `${url}/anything`. */
  readonly url: string;
  /** Every request so far, in arrival order. */
  readonly requests: readonly ReceivedRequest[];
  /** Changes how later requests are answered. */
  setBehaviour(behaviour: ReceiverBehaviour): void;
  /**
   * Resolves with the first request (already received or still to come) that matches. Rejects
   * after `timeoutMs` so a missing delivery fails the test with a message instead of hanging it.
   */
  waitFor(match?: (request: ReceivedRequest) => boolean, timeoutMs?: number): Promise<ReceivedRequest>;
  close(): Promise<void>;
}

/** Starts a receiver on an ephemeral port. */
export const startReceiver = async (behaviour: ReceiverBehaviour = {}): Promise<Receiver> => {
  let current: ReceiverBehaviour = behaviour;
  const requests: ReceivedRequest[] = [];
  const waiters = new Set<{ match: (r: ReceivedRequest) => boolean; resolve: (r: ReceivedRequest) => void }>();
  const timers = new Set<NodeJS.Timeout>();

  const server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (chunk: Buffer) => chunks.push(chunk));
    req.on('end', () => {
      const body = Buffer.concat(chunks).toString('utf8');
      let json: unknown;
      try {
        json = JSON.parse(body);
      } catch {
        json = undefined;
      }
      const received: ReceivedRequest = {
        method: req.method ?? 'GET',
        path: req.url ?? '/',
        headers: req.headers,
        body,
        json,
      };
      requests.push(received);
      for (const waiter of [...waiters]) {
        if (waiter.match(received)) {
          waiters.delete(waiter);
          waiter.resolve(received);
        }
      }
      const { status = 200, delayMs = 0 } = current;
      const answer = () => {
        if (res.destroyed) return;
        res.writeHead(status, { 'content-type': 'application/json' });
        res.end(JSON.stringify(status < 400 ? { ok: true } : { error: 'receiver told to fail' }));
      };
      if (delayMs > 0) {
        const timer = setTimeout(() => {
          timers.delete(timer);
          answer();
        }, delayMs);
        timers.add(timer);
      } else {
        answer();
      }
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', () => resolve()));
  const { port } = server.address() as AddressInfo;

  return {
    url: `http://127.0.0.1:${port}`,
    requests,
    setBehaviour: (next) => {
      current = next;
    },
    waitFor: (match = () => true, timeoutMs = 20_000) => {
      const seen = requests.find(match);
      if (seen) return Promise.resolve(seen);
      return new Promise<ReceivedRequest>((resolve, reject) => {
        const waiter = {
          match,
          resolve: (r: ReceivedRequest) => {
            clearTimeout(timer);
            timers.delete(timer);
            resolve(r);
          },
        };
        const timer = setTimeout(() => {
          waiters.delete(waiter);
          timers.delete(timer);
          reject(
            new Error(
              `receiver ${port}: no matching request within ${timeoutMs} ms (got ${requests.length}: ${requests.map((r) => `${r.method} ${r.path}`).join(', ') || 'none'})`,
            ),
          );
        }, timeoutMs);
        timers.add(timer);
        waiters.add(waiter);
      });
    },
    close: async () => {
      for (const timer of timers) clearTimeout(timer);
      timers.clear();
      await new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
      });
    },
  };
};

export interface HttpAnswer {
  readonly status: number;
  readonly headers: Headers;
  readonly text: string;
  /** Parsed JSON body, or undefined. */
  readonly json: Record<string, unknown> | undefined;
}

const answerOf = async (res: Response): Promise<HttpAnswer> => {
  const text = await res.text();
  let json: Record<string, unknown> | undefined;
  try {
    json = JSON.parse(text) as Record<string, unknown>;
  } catch {
    json = undefined;
  }
  return { status: res.status, headers: res.headers, text, json };
};

/** Any request, with the body read and parsed. */
export const request = async (url: string, init: RequestInit = {}): Promise<HttpAnswer> =>
  answerOf(await fetch(url, init));

/**
 * `send()`, and again after the answer's Retry-After while the relay answers 503 (at most 5 times), as
 * a caller does: a 503 started nothing and says to retry later. Locally the relay's table, queue and
 * workflow engine share its process, so a burst of requests on a loaded machine can get one
 * (`Rate limiter unavailable`, `Could not queue the task`); what the tests assert is what the
 * accepted requests did.
 */
export const sendUntilNot503 = async (send: () => Promise<HttpAnswer>): Promise<HttpAnswer> => {
  let answer = await send();
  for (let retry = 0; retry < 5 && answer.status === 503; retry += 1) {
    await new Promise((resolve) => setTimeout(resolve, Number(answer.headers.get('retry-after') ?? 1) * 1_000));
    answer = await send();
  }
  return answer;
};

/**
 * The two headers of a v2-signed request (issue 29): X-Webhook-Timestamp (now, or `timestamp`) and
 * X-Webhook-Signature `v2=<hex>` over `v2.<timestamp>.<METHOD>.<path with query>.<body>`.
 */
export const v2Headers = (
  secret: string,
  method: 'GET' | 'POST' | 'PUT' | 'DELETE',
  pathWithQuery: string,
  body = '',
  timestamp = String(Math.floor(Date.now() / 1000)),
): Record<string, string> => ({
  'x-webhook-timestamp': timestamp,
  'x-webhook-signature': signatureV2(secret, timestamp, method, pathWithQuery, method === 'GET' ? '' : body),
});

/** Whether the relay needs signature v2 for this request whatever SIGNATURE_VERSIONS says (issue 29). */
const needsV2 = (path: string, headers: Record<string, string>): boolean =>
  path.startsWith('/admin/keys') || Object.keys(headers).some((h) => h.toLowerCase() === 'x-webhook-key-id');

/**
 * POSTs `body` (an object is sent as JSON) to `${baseUrl}${path}`, signed with `secret`: v1 (the hex
 * HMAC-SHA256 of the exact bytes sent, the spec's scheme, accepted by the local runtime) by default;
 * v2 (`signedPostV2`) where the relay requires it, on `/admin/keys*` and with X-Webhook-Key-Id.
 */
export const signedPost = async (
  baseUrl: string,
  path: string,
  body: unknown,
  secret: string,
  headers: Record<string, string> = {},
): Promise<HttpAnswer> => {
  if (needsV2(path, headers)) return signedPostV2(baseUrl, path, body, secret, headers);
  const raw = typeof body === 'string' ? body : JSON.stringify(body);
  return request(`${baseUrl}${path}`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', 'x-webhook-signature': hmacHex(secret, raw), ...headers },
    body: raw,
  });
};

/** POSTs `body` signed v2 (timestamp now): what deployed relays accept, and callers with a key id. */
export const signedPostV2 = async (
  baseUrl: string,
  path: string,
  body: unknown,
  secret: string,
  headers: Record<string, string> = {},
): Promise<HttpAnswer> => {
  const raw = typeof body === 'string' ? body : JSON.stringify(body);
  return request(`${baseUrl}${path}`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', ...v2Headers(secret, 'POST', path, raw), ...headers },
    body: raw,
  });
};
