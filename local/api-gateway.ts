/**
 * A local stand-in for the HTTP API (API Gateway v2): a node:http server that turns each request into
 * the payload-format-2.0 event API Gateway would send, calls the same Lambda handler the stack
 * deploys for that route, and writes back its structured result.
 */
import { randomUUID } from 'node:crypto';
import { createServer } from 'node:http';
import type { IncomingMessage, Server, ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { APIGatewayProxyEventV2, APIGatewayProxyStructuredResultV2, Context } from 'aws-lambda';
import type { RouteDefinition } from '../contract/routes';

/** What every relay handler module exports as `handler`. */
export type LambdaHandler<E = unknown, R = unknown> = (event: E, context: Context) => Promise<R>;

/** API Gateway's own limit is 10 MB; 1 MiB is plenty here, the handlers cap bodies at 64 KiB. */
export const DEFAULT_MAX_BODY_BYTES = 1024 * 1024;
/** HTTP API integrations time out after 30 s. */
export const DEFAULT_INTEGRATION_TIMEOUT_MS = 30_000;

export interface ApiGatewayOptions {
  readonly routes: readonly RouteDefinition[];
  /** Resolves a route's handler (the runtime imports `route.entry`). Called once per route, at start. */
  readonly loadHandler: (route: RouteDefinition) => Promise<LambdaHandler>;
  /** 0 picks a free port. @default 0 */
  readonly port?: number;
  /** The bind address (HOST). `0.0.0.0` / `::` listen on every interface. @default '127.0.0.1' */
  readonly host?: string;
  /**
   * Peers whose `X-Forwarded-For` is believed (TRUSTED_PROXIES): a request from one of them gets, as
   * its `sourceIp`, the right-most address of the header that is not itself a trusted proxy.
   * @default - none: the source is always the TCP peer
   */
  readonly trustedProxies?: readonly string[];
  /** @default DEFAULT_MAX_BODY_BYTES */
  readonly maxBodyBytes?: number;
  /** @default DEFAULT_INTEGRATION_TIMEOUT_MS */
  readonly integrationTimeoutMs?: number;
  /** Access and error log; defaults to silence. */
  readonly log?: (level: 'info' | 'error', message: string, fields?: Record<string, unknown>) => void;
}

export interface LocalApiGateway {
  /** `http://127.0.0.1:<port>` without a trailing slash. */
  readonly url: string;
  readonly port: number;
  close(): Promise<void>;
}

interface CompiledRoute {
  readonly route: RouteDefinition;
  readonly segments: readonly string[];
  readonly handler: LambdaHandler;
}

/** Content types API Gateway passes as text; everything else (form posts included) arrives base64-encoded. */
export const isTextContentType = (contentType: string | undefined): boolean => {
  if (!contentType) return false;
  const type = contentType.split(';')[0].trim().toLowerCase();
  return type.startsWith('text/') || /^application\/(json|xml|javascript|[\w.+-]+\+(json|xml))$/.test(type);
};

/**
 * Matches a request path against a route path with `{param}` (one segment) and `{param+}` (greedy)
 * placeholders. Returns the decoded path parameters, or undefined when it does not match.
 */
export const matchPath = (
  routeSegments: readonly string[],
  pathSegments: readonly string[],
): Record<string, string> | undefined => {
  const params: Record<string, string> = {};
  for (let i = 0; i < routeSegments.length; i += 1) {
    const pattern = routeSegments[i];
    const greedy = /^\{(.+)\+\}$/.exec(pattern);
    if (greedy) {
      const rest = pathSegments.slice(i);
      if (rest.length === 0) return undefined;
      params[greedy[1]] = safeDecode(rest.join('/'));
      return params;
    }
    const segment = pathSegments[i];
    if (segment === undefined || segment === '') return undefined;
    const param = /^\{(.+)\}$/.exec(pattern);
    if (param) params[param[1]] = safeDecode(segment);
    else if (pattern !== segment) return undefined;
  }
  return routeSegments.length === pathSegments.length ? params : undefined;
};

const safeDecode = (value: string): string => {
  try {
    return decodeURIComponent(value);
  } catch {
    return value;
  }
};

const splitPath = (path: string): string[] => path.split('/').slice(1);

/** API Gateway joins repeated headers and query parameters with commas. */
const joinValues = (value: string | string[] | undefined): string | undefined =>
  Array.isArray(value) ? value.join(',') : value;

/** `::ffff:127.0.0.1` → `127.0.0.1`, as API Gateway reports IPv4 clients. */
const plainAddress = (address: string): string => (address.startsWith('::ffff:') ? address.slice(7) : address);

/**
 * The client's address: the TCP peer, unless the peer is a trusted proxy; then X-Forwarded-For is
 * read from the right (each proxy appends the address it saw) and the first address not itself a
 * trusted proxy is the client. Whatever a client writes on the left of the header is never reached.
 */
export const sourceIpOf = (req: IncomingMessage, trustedProxies: ReadonlySet<string> = new Set()): string => {
  const peer = plainAddress(req.socket.remoteAddress ?? '0.0.0.0');
  if (!trustedProxies.has(peer)) return peer;
  const header = req.headers['x-forwarded-for'];
  const hops = (Array.isArray(header) ? header.join(',') : (header ?? ''))
    .split(',')
    .map((hop) => plainAddress(hop.trim()))
    .filter((hop) => hop !== '');
  for (let i = hops.length - 1; i >= 0; i -= 1) if (!trustedProxies.has(hops[i])) return hops[i];
  return hops[0] ?? peer;
};

/** A URL for reaching a server bound to `host` from this machine. */
export const urlForHost = (host: string, port: number): string => {
  if (host === '0.0.0.0' || host === '' || host === '::') return `http://127.0.0.1:${port}`;
  return host.includes(':') ? `http://[${host}]:${port}` : `http://${host}:${port}`;
};

/** `12/Mar/2020:19:03:58 +0000`, the format of requestContext.time. */
const clfTime = (date: Date): string => {
  const months = ['Jan', 'Feb', 'Mar', 'Apr', 'May', 'Jun', 'Jul', 'Aug', 'Sep', 'Oct', 'Nov', 'Dec'];
  const pad = (n: number) => String(n).padStart(2, '0');
  return `${pad(date.getUTCDate())}/${months[date.getUTCMonth()]}/${date.getUTCFullYear()}:${pad(date.getUTCHours())}:${pad(date.getUTCMinutes())}:${pad(date.getUTCSeconds())} +0000`;
};

/** Builds the payload-format-2.0 event for one request. Exported for tests of the mapping itself. */
export const buildEvent = (input: {
  readonly req: IncomingMessage;
  readonly route: RouteDefinition;
  readonly url: URL;
  readonly pathParameters: Record<string, string>;
  readonly body: Buffer;
  readonly requestId: string;
  readonly now: Date;
  readonly trustedProxies?: ReadonlySet<string>;
}): APIGatewayProxyEventV2 => {
  const { req, route, url, body } = input;
  const headers: Record<string, string> = {};
  for (const [name, value] of Object.entries(req.headers)) {
    const joined = joinValues(value);
    if (joined !== undefined && name !== 'cookie') headers[name.toLowerCase()] = joined;
  }
  const query: Record<string, string> = {};
  for (const key of new Set(url.searchParams.keys())) query[key] = url.searchParams.getAll(key).join(',');
  const cookies = req.headers.cookie
    ?.split(';')
    .map((c) => c.trim())
    .filter(Boolean);
  const hasBody = body.length > 0;
  const asText = isTextContentType(req.headers['content-type']);
  const routeKey = `${route.method} ${route.path}`;
  const rawPath = url.pathname;
  return {
    version: '2.0',
    routeKey,
    rawPath,
    rawQueryString: url.search.startsWith('?') ? url.search.slice(1) : '',
    ...(cookies && cookies.length > 0 ? { cookies } : {}),
    headers,
    ...(Object.keys(query).length > 0 ? { queryStringParameters: query } : {}),
    ...(Object.keys(input.pathParameters).length > 0 ? { pathParameters: input.pathParameters } : {}),
    requestContext: {
      accountId: '000000000000',
      apiId: 'local',
      domainName: headers.host ?? 'localhost',
      domainPrefix: (headers.host ?? 'localhost').split('.')[0],
      http: {
        method: req.method ?? 'GET',
        path: rawPath,
        protocol: `HTTP/${req.httpVersion}`,
        sourceIp: sourceIpOf(req, input.trustedProxies),
        userAgent: headers['user-agent'] ?? '',
      },
      requestId: input.requestId,
      routeKey,
      stage: '$default',
      time: clfTime(input.now),
      timeEpoch: input.now.getTime(),
    },
    ...(hasBody ? { body: asText ? body.toString('utf8') : body.toString('base64') } : {}),
    isBase64Encoded: hasBody && !asText,
  };
};

/** A Lambda context for one invocation, with the remaining time counting down from `timeoutMs`. */
export const lambdaContext = (functionName: string, requestId: string, timeoutMs: number): Context => {
  const deadline = Date.now() + timeoutMs;
  const unsupported = () => {
    throw new Error('callback-style completion is not supported; return a promise');
  };
  return {
    callbackWaitsForEmptyEventLoop: true,
    functionName,
    functionVersion: '$LATEST',
    invokedFunctionArn: `arn:aws:lambda:${process.env.AWS_REGION ?? 'us-east-1'}:000000000000:function:${functionName}`,
    memoryLimitInMB: '256',
    awsRequestId: requestId,
    logGroupName: `/aws/lambda/${functionName}`,
    logStreamName: 'local',
    getRemainingTimeInMillis: () => Math.max(0, deadline - Date.now()),
    done: unsupported,
    fail: unsupported,
    succeed: unsupported,
  };
};

const sendJson = (
  res: ServerResponse,
  statusCode: number,
  body: unknown,
  headers: Record<string, string> = {},
): void => {
  if (res.headersSent) {
    res.end();
    return;
  }
  const text = JSON.stringify(body);
  res.writeHead(statusCode, {
    'content-type': 'application/json',
    'content-length': Buffer.byteLength(text),
    ...headers,
  });
  res.end(text);
};

/** Writes a handler's answer the way API Gateway interprets payload-format-2.0 results. */
const sendResult = (res: ServerResponse, result: unknown, requestId: string): void => {
  const structured = typeof result === 'object' && result !== null && 'statusCode' in result;
  if (!structured) {
    // API Gateway: a result without statusCode is a 200 whose body is the JSON of the result.
    const text = typeof result === 'string' ? result : JSON.stringify(result ?? null);
    res.writeHead(200, { 'content-type': 'application/json', 'apigw-requestid': requestId });
    res.end(text);
    return;
  }
  const r = result as APIGatewayProxyStructuredResultV2;
  const headers: Record<string, string | string[]> = { 'apigw-requestid': requestId };
  for (const [name, value] of Object.entries(r.headers ?? {})) headers[name.toLowerCase()] = String(value);
  if (r.cookies && r.cookies.length > 0) headers['set-cookie'] = r.cookies;
  const body = r.body === undefined ? Buffer.alloc(0) : Buffer.from(r.body, r.isBase64Encoded ? 'base64' : 'utf8');
  headers['content-length'] = String(body.length);
  if (!('content-type' in headers) && body.length > 0) headers['content-type'] = 'application/json';
  res.writeHead(r.statusCode ?? 200, headers);
  res.end(body);
};

class PayloadTooLargeError extends Error {
  public constructor() {
    super('Payload too large');
    this.name = 'PayloadTooLargeError';
  }
}

const readBody = (req: IncomingMessage, maxBytes: number): Promise<Buffer> =>
  new Promise((resolve, reject) => {
    const declared = Number(req.headers['content-length']);
    if (Number.isFinite(declared) && declared > maxBytes) {
      reject(new PayloadTooLargeError());
      return;
    }
    const chunks: Buffer[] = [];
    let size = 0;
    const onData = (chunk: Buffer) => {
      size += chunk.length;
      if (size > maxBytes) {
        req.off('data', onData);
        reject(new PayloadTooLargeError());
        return;
      }
      chunks.push(chunk);
    };
    req.on('data', onData);
    req.once('end', () => resolve(Buffer.concat(chunks)));
    req.once('error', reject);
  });

/** Starts the local HTTP API. Every route's handler is loaded before the server listens. */
export const startApiGateway = async (options: ApiGatewayOptions): Promise<LocalApiGateway> => {
  const log = options.log ?? (() => undefined);
  const maxBodyBytes = options.maxBodyBytes ?? DEFAULT_MAX_BODY_BYTES;
  const integrationTimeoutMs = options.integrationTimeoutMs ?? DEFAULT_INTEGRATION_TIMEOUT_MS;
  const trustedProxies = new Set((options.trustedProxies ?? []).map(plainAddress));
  const compiled: CompiledRoute[] = await Promise.all(
    options.routes.map(async (route) => ({
      route,
      segments: splitPath(route.path),
      handler: await options.loadHandler(route),
    })),
  );

  const handle = async (req: IncomingMessage, res: ServerResponse): Promise<void> => {
    const started = Date.now();
    const requestId = randomUUID();
    let url: URL;
    try {
      url = new URL(req.url ?? '/', 'http://localhost');
    } catch {
      sendJson(res, 400, { error: 'Bad request' });
      return;
    }
    const segments = splitPath(url.pathname);
    const onPath = compiled
      .map((c) => ({ c, params: matchPath(c.segments, segments) }))
      .filter((m): m is { c: CompiledRoute; params: Record<string, string> } => m.params !== undefined);
    if (onPath.length === 0) {
      req.resume();
      sendJson(res, 404, { error: 'Not found' });
      return;
    }
    const match = onPath.find((m) => m.c.route.method === req.method);
    if (!match) {
      req.resume();
      sendJson(
        res,
        405,
        { error: 'Method not allowed' },
        { allow: [...new Set(onPath.map((m) => m.c.route.method))].join(', ') },
      );
      return;
    }

    let body: Buffer;
    try {
      body = await readBody(req, maxBodyBytes);
    } catch (error) {
      if (error instanceof PayloadTooLargeError) {
        // Stop reading an oversized upload: answer, then drop the connection.
        sendJson(res, 413, { error: 'Payload too large' }, { connection: 'close' });
        res.once('finish', () => req.destroy());
      } else {
        req.destroy();
      }
      return;
    }

    const { route, handler } = match.c;
    const event = buildEvent({
      req,
      route,
      url,
      pathParameters: match.params,
      body,
      requestId,
      now: new Date(),
      trustedProxies,
    });
    const context = lambdaContext(`local-${route.id}`, requestId, integrationTimeoutMs);
    let timer: NodeJS.Timeout | undefined;
    try {
      const timeout = new Promise<'timeout'>((resolve) => {
        timer = setTimeout(() => resolve('timeout'), integrationTimeoutMs);
      });
      const result = await Promise.race([handler(event, context), timeout]);
      if (result === 'timeout') {
        log('error', 'integration timed out', { route: event.routeKey, requestId });
        sendJson(res, 504, { error: 'Gateway timeout' });
      } else {
        sendResult(res, result, requestId);
      }
    } catch (error) {
      // Never echo the error: it may carry internals. The log gets name and message only.
      log('error', 'handler threw', {
        route: event.routeKey,
        requestId,
        error: error instanceof Error ? `${error.name}: ${error.message}` : String(error),
      });
      sendJson(res, 500, { error: 'Internal error' });
    } finally {
      clearTimeout(timer);
    }
    log('info', `${req.method} ${url.pathname} ${res.statusCode}`, { ms: Date.now() - started, requestId });
  };

  const server: Server = createServer((req, res) => {
    handle(req, res).catch((error: unknown) => {
      log('error', 'gateway failure', { error: error instanceof Error ? error.message : String(error) });
      sendJson(res, 500, { error: 'Internal error' });
    });
  });
  // Idle keep-alive connections are kept 65 s (Node's default is 5 s). A client that reuses a
  // connection just as the server closes it reads "other side closed": undici trusts the server's
  // `Keep-Alive: timeout` hint less one second, and on a loaded machine a timer can be later than
  // that. API Gateway keeps idle connections far longer than 5 s too; headersTimeout must exceed it.
  server.keepAliveTimeout = 65_000;
  server.headersTimeout = 66_000;
  // A malformed request line must not take the process down.
  server.on('clientError', (_error, socket) => {
    if (socket.writable) socket.end('HTTP/1.1 400 Bad Request\r\nconnection: close\r\ncontent-length: 0\r\n\r\n');
    else socket.destroy();
  });

  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(options.port ?? 0, options.host ?? '127.0.0.1', () => {
      server.off('error', reject);
      resolve();
    });
  });
  const { port } = server.address() as AddressInfo;
  return {
    url: urlForHost(options.host ?? '127.0.0.1', port),
    port,
    close: () =>
      new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
      }),
  };
};
