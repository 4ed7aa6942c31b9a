/**
 * The AWS SDK clients' timeouts are real: a hung endpoint makes a call fail with the SDK's retryable
 * TimeoutError after exactly maxAttempts attempts, instead of waiting for the Lambda timeout. The
 * endpoints are local TCP servers; no assertion is on elapsed time (the timeouts here are shortened
 * through awsClientConfig's numbers only). The request timeout runs on jest's fake clock, moved only
 * once the endpoint has read the attempt's request, so how many attempts it sees does not depend on
 * the machine's load; the socket idle timeout is Node's own timer (not fakeable), so that test waits
 * for the endpoint to have read what was sent before counting.
 */
import { createServer, type Server, type Socket } from 'node:net';
import type { AddressInfo } from 'node:net';
import { setTimeout as realDelay } from 'node:timers/promises';
import { ChangeMessageVisibilityCommand } from '@aws-sdk/client-sqs';
import { DynamoDBClient, GetItemCommand } from '@aws-sdk/client-dynamodb';
import { GetCommand } from '@aws-sdk/lib-dynamodb';
import { GetSecretValueCommand, SecretsManagerClient } from '@aws-sdk/client-secrets-manager';
import { StartExecutionCommand } from '@aws-sdk/client-sfn';
import { MAXIMUM_RETRY_DELAY, Retry } from '@smithy/core/retry';
import {
  AWS_CLIENT_TIMEOUTS,
  awsCallGiveUpMs,
  awsClientConfig,
  awsClientTimeouts,
  documentClient,
  SDK_RETRY_BACKOFF,
  type AwsClientTimeouts,
} from '../../../lambdas/adapters/aws-clients';
import { SDK_LOGGER_MIDDLEWARE, traceClient } from '../../../lambdas/adapters/observability';
import { sqsClient } from '../../../lambdas/adapters/sqs-client';
import { sfnClient } from '../../../lambdas/adapters/sfn-client';

/** What a raw TCP endpoint saw: connections accepted and HTTP requests begun on them. */
interface Endpoint {
  readonly url: string;
  connections: number;
  requests: number;
  close(): Promise<void>;
}

/** A TCP server that counts connections and request lines and answers each request with `answer` (or never). */
const startEndpoint = async (answer?: (socket: Socket) => void): Promise<Endpoint> => {
  const sockets = new Set<Socket>();
  const server: Server = createServer((socket) => {
    endpoint.connections += 1;
    sockets.add(socket);
    socket.on('close', () => sockets.delete(socket));
    socket.on('error', () => undefined);
    socket.on('data', (chunk: Buffer) => {
      const started = chunk.toString('latin1').match(/^POST \/ HTTP\/1\.1\r\n/gm)?.length ?? 0;
      endpoint.requests += started;
      if (started > 0) answer?.(socket);
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  const endpoint: Endpoint = {
    url: `http://127.0.0.1:${port}`,
    connections: 0,
    requests: 0,
    close: async () => {
      for (const socket of sockets) socket.destroy();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
  return endpoint;
};

const LOCAL = { region: 'us-east-1', credentials: { accessKeyId: 'x', secretAccessKey: 'y' } } as const;

/** The relay's configuration with only the numbers changed. */
const withTimeouts = (overrides: Partial<AwsClientTimeouts>) =>
  awsClientConfig({ ...AWS_CLIENT_TIMEOUTS, ...overrides });

const rejection = async (
  promise: Promise<unknown>,
): Promise<Error & { code?: string; $metadata?: { attempts?: number } }> => {
  try {
    await promise;
  } catch (error) {
    return error as Error;
  }
  throw new Error('expected the call to fail');
};

/** Lets real I/O run until `condition` holds (real time: node:timers/promises is never faked); fails after 10 s. */
const until = async (condition: () => boolean, what: string): Promise<void> => {
  const deadline = Date.now() + 10_000;
  while (!condition()) {
    if (Date.now() > deadline) throw new Error(`still waiting for ${what} after 10 s`);
    await realDelay(1);
  }
};

describe('Adapter: AWS client timeouts', () => {
  let endpoint: Endpoint | undefined;
  afterEach(async () => {
    jest.useRealTimers();
    await endpoint?.close();
    endpoint = undefined;
  });

  it('a request that is never answered fails with TimeoutError after exactly maxAttempts connections (request timeout)', async () => {
    // Prepare: the server accepts and reads, and never writes a byte.
    endpoint = await startEndpoint();
    const hung = endpoint;
    const REQUEST_TIMEOUT_MS = 200;
    // Only setTimeout/clearTimeout are fake (the handler's request timer and the SDK's back-off go
    // through them); sockets, Date and the ticks stay real. The fake clock moves only after the
    // endpoint has read the open attempt's request, so a slow machine cannot end an attempt early.
    jest.useFakeTimers({
      doNotFake: [
        'Date',
        'hrtime',
        'performance',
        'nextTick',
        'queueMicrotask',
        'setImmediate',
        'clearImmediate',
        'setInterval',
        'clearInterval',
      ],
    });
    // The socket idle timeout is set far out, so only the request timeout can end an attempt.
    const client = new DynamoDBClient({
      ...withTimeouts({ requestTimeoutMs: REQUEST_TIMEOUT_MS, socketTimeoutMs: 60_000 }),
      ...LOCAL,
      endpoint: hung.url,
    });
    let settled = false;
    const outcome = rejection(
      client.send(new GetItemCommand({ TableName: 't', Key: { pk: { S: 'a' } } })).finally(() => {
        settled = true;
      }),
    );
    // Act: per attempt, wait for its request, then let the fake clock reach its request timeout.
    const seen: { attempt: number; connections: number; requests: number; settled: boolean }[] = [];
    for (let attempt = 1; attempt <= AWS_CLIENT_TIMEOUTS.maxAttempts; attempt += 1) {
      await until(() => settled || hung.requests >= attempt, `request ${attempt}`);
      // 1 ms short of the request timeout the attempt is still open: no failure, no new connection.
      await jest.advanceTimersByTimeAsync(REQUEST_TIMEOUT_MS - 1);
      seen.push({ attempt, connections: hung.connections, requests: hung.requests, settled });
      // At the timeout the attempt ends; before the next one, the SDK backs off (the next fake timer).
      await jest.advanceTimersByTimeAsync(1);
      if (attempt < AWS_CLIENT_TIMEOUTS.maxAttempts) await jest.advanceTimersToNextTimerAsync();
    }
    await until(() => settled, 'the call to fail');
    const error = await outcome;
    jest.useRealTimers();
    client.destroy();
    // Assess
    expect(seen).toEqual(
      Array.from({ length: AWS_CLIENT_TIMEOUTS.maxAttempts }, (_, i) => ({
        attempt: i + 1,
        connections: i + 1,
        requests: i + 1,
        settled: false,
      })),
    );
    expect(error.name).toBe('TimeoutError');
    expect(error.code).toBe('ETIMEDOUT');
    expect(error.message).toContain(`${REQUEST_TIMEOUT_MS} ms requestTimeout`);
    expect(error.$metadata?.attempts).toBe(AWS_CLIENT_TIMEOUTS.maxAttempts);
    expect(hung.connections).toBe(AWS_CLIENT_TIMEOUTS.maxAttempts);
    expect(hung.requests).toBe(AWS_CLIENT_TIMEOUTS.maxAttempts);
  });

  it('a response whose body stalls after the headers fails with TimeoutError after exactly maxAttempts requests (socket timeout)', async () => {
    // Prepare: headers and the first byte of a 100-byte body, then nothing.
    endpoint = await startEndpoint((socket) =>
      socket.write('HTTP/1.1 200 OK\r\nContent-Type: application/x-amz-json-1.0\r\nContent-Length: 100\r\n\r\n{'),
    );
    // The request timeout is set far out: the headers arrive at once, so only the idle timeout can end an attempt.
    const client = new DynamoDBClient({
      ...withTimeouts({ requestTimeoutMs: 60_000, socketTimeoutMs: 200 }),
      ...LOCAL,
      endpoint: endpoint.url,
    });
    // Act
    const error = await rejection(client.send(new GetItemCommand({ TableName: 't', Key: { pk: { S: 'a' } } })));
    client.destroy();
    // Assess
    expect(error.name).toBe('TimeoutError');
    expect(error.message).toContain('200 ms of inactivity');
    expect(error.$metadata?.attempts).toBe(AWS_CLIENT_TIMEOUTS.maxAttempts);
    // Each attempt writes its request as its socket connects, before its idle timer can fire; on a
    // loaded machine the endpoint may read the last one only after the call has failed, so wait, then count.
    const stalled = endpoint;
    await until(() => stalled.requests >= AWS_CLIENT_TIMEOUTS.maxAttempts, 'the requests sent');
    expect(stalled.requests).toBe(AWS_CLIENT_TIMEOUTS.maxAttempts);
  });

  describe('every relay client is built with awsClientConfig()', () => {
    const ENDPOINT_VARIABLES = ['AWS_ENDPOINT_URL_DYNAMODB', 'AWS_ENDPOINT_URL_SQS', 'AWS_ENDPOINT_URL_SFN'] as const;
    afterAll(() => {
      for (const name of ENDPOINT_VARIABLES) delete process.env[name];
    });

    it('documentClient, sqsClient, sfnClient and a SecretsManagerClient given awsClientConfig() carry its timeouts and attempts', async () => {
      // Prepare: an endpoint that refuses every request at once (a client error: one attempt each).
      const body = '{"__type":"ValidationException","message":"refused by the test endpoint"}';
      endpoint = await startEndpoint((socket) =>
        socket.write(
          `HTTP/1.1 400 Bad Request\r\nContent-Type: application/x-amz-json-1.0\r\nContent-Length: ${body.length}\r\n\r\n${body}`,
        ),
      );
      // documentClient / sqsClient / sfnClient take their endpoints from the environment, as in the local runtime.
      for (const name of ENDPOINT_VARIABLES) process.env[name] = endpoint.url;
      // secrets.ts builds its client this way (its one line: `new SecretsManagerClient(awsClientConfig())`).
      const secrets = new SecretsManagerClient({ ...awsClientConfig(), ...LOCAL, endpoint: endpoint.url });
      // Act: one call each, so each client's HTTP handler resolves its configuration.
      const errors = await Promise.all([
        rejection(documentClient().send(new GetCommand({ TableName: 't', Key: { pk: 'a' } }))),
        rejection(
          sqsClient().send(
            new ChangeMessageVisibilityCommand({
              QueueUrl: `${endpoint.url}/000000000000/jobs`,
              ReceiptHandle: 'r',
              VisibilityTimeout: 1,
            }),
          ),
        ),
        rejection(
          sfnClient().send(
            new StartExecutionCommand({ stateMachineArn: 'arn:aws:states:us-east-1:000000000000:stateMachine:m' }),
          ),
        ),
        rejection(secrets.send(new GetSecretValueCommand({ SecretId: 's' }))),
      ]);
      // Assess
      expect(errors.map((e) => e.name)).toEqual([
        'ValidationException',
        'ValidationException',
        'ValidationException',
        'ValidationException',
      ]);
      for (const client of [documentClient(), sqsClient(), sfnClient(), secrets]) {
        expect(await client.config.maxAttempts()).toBe(AWS_CLIENT_TIMEOUTS.maxAttempts);
        const { retryMode } = client.config;
        expect(typeof retryMode === 'string' ? retryMode : await retryMode()).toBe('standard');
        // The Node HTTP handler's resolved options (HttpHandler.httpHandlerConfigs).
        const handler = client.config.requestHandler as unknown as { httpHandlerConfigs(): Record<string, unknown> };
        expect(handler.httpHandlerConfigs()).toMatchObject({
          connectionTimeout: AWS_CLIENT_TIMEOUTS.connectionTimeoutMs,
          requestTimeout: AWS_CLIENT_TIMEOUTS.requestTimeoutMs,
          throwOnRequestTimeout: true,
          socketTimeout: AWS_CLIENT_TIMEOUTS.socketTimeoutMs,
        });
      }
      expect(endpoint.requests).toBe(4);
      secrets.destroy();
    });
  });

  it("every relay client is built without the SDK's logger middleware (it copied each call's input and answer for a no-op logger)", async () => {
    // Prepare: a client with a logger, built plainly and through traceClient
    const body = '{"__type":"ValidationException","message":"refused by the test endpoint"}';
    endpoint = await startEndpoint((socket) =>
      socket.write(
        `HTTP/1.1 400 Bad Request\r\nContent-Type: application/x-amz-json-1.0\r\nContent-Length: ${body.length}\r\n\r\n${body}`,
      ),
    );
    const logged: unknown[] = [];
    const sdkLogger = {
      debug: () => {},
      info: () => {},
      warn: () => {},
      error: (entry: unknown) => logged.push(entry),
    };
    const plain = new DynamoDBClient({ ...awsClientConfig(), ...LOCAL, endpoint: endpoint.url, logger: sdkLogger });
    const traced = traceClient(
      new DynamoDBClient({ ...awsClientConfig(), ...LOCAL, endpoint: endpoint.url, logger: sdkLogger }),
    );
    // Act
    await rejection(plain.send(new GetItemCommand({ TableName: 't', Key: { pk: { S: 'a' } } })));
    const plainLogged = logged.length;
    await rejection(traced.send(new GetItemCommand({ TableName: 't', Key: { pk: { S: 'a' } } })));
    // Assess: the plain client's middleware handed the call to the logger, the relay's did not
    expect(plainLogged).toBe(1);
    expect(logged).toHaveLength(1);
    expect(plain.middlewareStack.identify().some((m) => m.startsWith(SDK_LOGGER_MIDDLEWARE))).toBe(true);
    for (const client of [traced, documentClient(), sqsClient(), sfnClient()])
      expect(client.middlewareStack.identify().filter((m) => m.startsWith(SDK_LOGGER_MIDDLEWARE))).toEqual([]);
    plain.destroy();
    traced.destroy();
  });

  describe('the figures the time budgets use', () => {
    it("SDK_RETRY_BACKOFF is the SDK's own back-off (base delay and cap)", () => {
      expect(Retry.delay()).toBe(SDK_RETRY_BACKOFF.baseMs);
      expect(MAXIMUM_RETRY_DELAY).toBe(SDK_RETRY_BACKOFF.maxMs);
    });

    it('a hung call gives up within seconds: attempts × (request + socket timeout) + back-off', () => {
      const t = AWS_CLIENT_TIMEOUTS;
      expect(t.connectionTimeoutMs).toBeLessThanOrEqual(t.requestTimeoutMs);
      expect(awsCallGiveUpMs()).toBe(t.maxAttempts * (t.requestTimeoutMs + t.socketTimeoutMs) + 50 + 100);
      expect(awsCallGiveUpMs()).toBeLessThanOrEqual(15_000);
    });
  });
  describe('AWS_CALL_TIMEOUT_MS (npm start: 10 s; never set by the stack)', () => {
    it('replaces the request and socket timeouts only; unset or not a positive integer leaves the defaults', () => {
      expect(awsClientTimeouts({ AWS_CALL_TIMEOUT_MS: '10000' })).toEqual({
        ...AWS_CLIENT_TIMEOUTS,
        requestTimeoutMs: 10_000,
        socketTimeoutMs: 10_000,
      });
      for (const value of [undefined, '', '0', '-5', '1.5', 'ten'])
        expect(awsClientTimeouts({ AWS_CALL_TIMEOUT_MS: value })).toBe(AWS_CLIENT_TIMEOUTS);
      // The time budgets are figured on the defaults, whatever the environment says.
      expect(awsCallGiveUpMs()).toBe(awsCallGiveUpMs(AWS_CLIENT_TIMEOUTS));
    });

    it('is what a client built with awsClientConfig() gets', async () => {
      // Prepare: an endpoint that refuses at once (the handler resolves its options on the first call)
      const body = '{"__type":"ValidationException","message":"refused by the test endpoint"}';
      endpoint = await startEndpoint((socket) =>
        socket.write(
          `HTTP/1.1 400 Bad Request\r\nContent-Type: application/x-amz-json-1.0\r\nContent-Length: ${body.length}\r\n\r\n${body}`,
        ),
      );
      const saved = process.env.AWS_CALL_TIMEOUT_MS;
      process.env.AWS_CALL_TIMEOUT_MS = '7000';
      try {
        const client = new DynamoDBClient({ ...awsClientConfig(), ...LOCAL, endpoint: endpoint.url });
        await rejection(client.send(new GetItemCommand({ TableName: 't', Key: { pk: { S: 'a' } } })));
        const handler = client.config.requestHandler as unknown as { httpHandlerConfigs(): Record<string, unknown> };
        expect(handler.httpHandlerConfigs()).toMatchObject({
          connectionTimeout: AWS_CLIENT_TIMEOUTS.connectionTimeoutMs,
          requestTimeout: 7_000,
          socketTimeout: 7_000,
        });
        client.destroy();
      } finally {
        if (saved === undefined) delete process.env.AWS_CALL_TIMEOUT_MS;
        else process.env.AWS_CALL_TIMEOUT_MS = saved;
      }
    });
  });
});
