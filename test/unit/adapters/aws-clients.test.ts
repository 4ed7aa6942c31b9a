/**
 * The AWS SDK clients' timeouts are real: a hung endpoint makes a call fail with the SDK's retryable
 * TimeoutError after exactly maxAttempts attempts, instead of waiting for the Lambda timeout. The
 * endpoints are local TCP servers; no assertion is on elapsed time (the timeouts here are shortened
 * through awsClientConfig's numbers only, so each test takes about a second).
 */
import { createServer, type Server, type Socket } from 'node:net';
import type { AddressInfo } from 'node:net';
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
  documentClient,
  SDK_RETRY_BACKOFF,
  sfnClient,
  sqsClient,
  type AwsClientTimeouts,
} from '../../../lambdas/adapters/aws-clients';

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

describe('Adapter: AWS client timeouts', () => {
  let endpoint: Endpoint | undefined;
  afterEach(async () => {
    await endpoint?.close();
    endpoint = undefined;
  });

  it('a request that is never answered fails with TimeoutError after exactly maxAttempts connections (request timeout)', async () => {
    // Prepare: the server accepts and reads, and never writes a byte.
    endpoint = await startEndpoint();
    // The socket idle timeout is set far out, so only the request timeout can end an attempt.
    const client = new DynamoDBClient({
      ...withTimeouts({ requestTimeoutMs: 200, socketTimeoutMs: 60_000 }),
      ...LOCAL,
      endpoint: endpoint.url,
    });
    // Act
    const error = await rejection(client.send(new GetItemCommand({ TableName: 't', Key: { pk: { S: 'a' } } })));
    client.destroy();
    // Assess
    expect(error.name).toBe('TimeoutError');
    expect(error.code).toBe('ETIMEDOUT');
    expect(error.message).toContain('200 ms requestTimeout');
    expect(error.$metadata?.attempts).toBe(AWS_CLIENT_TIMEOUTS.maxAttempts);
    expect(endpoint.connections).toBe(AWS_CLIENT_TIMEOUTS.maxAttempts);
    expect(endpoint.requests).toBe(AWS_CLIENT_TIMEOUTS.maxAttempts);
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
    expect(endpoint.requests).toBe(AWS_CLIENT_TIMEOUTS.maxAttempts);
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
});
