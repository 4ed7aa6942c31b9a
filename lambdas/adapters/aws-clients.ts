/**
 * AWS SDK clients, one of each per Lambda instance, created on first use, all with
 * awsClientConfig() (timeouts and attempts, below).
 * No endpoint code here: the SDK reads AWS_ENDPOINT_URL_DYNAMODB / _SQS / _SFN itself, which is how
 * the local runtime points the same handlers at dynalite, fauxqs and local Step Functions.
 */
import { ConditionalCheckFailedException, DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { DynamoDBDocumentClient, GetCommand } from '@aws-sdk/lib-dynamodb';
import { traceClient } from './observability';

/** How long one AWS call may take, per attempt, and how many attempts it gets. */
export interface AwsClientTimeouts {
  /** DNS lookup and TCP connect of a new socket (a reused keep-alive socket skips this phase). */
  readonly connectionTimeoutMs: number;
  /** Wall clock from the attempt's start (connect and TLS included) to the response headers. */
  readonly requestTimeoutMs: number;
  /** Socket idle time: covers a response body that stalls after its headers. */
  readonly socketTimeoutMs: number;
  /** Attempts per call, the first included. */
  readonly maxAttempts: number;
}

/**
 * Timeouts of every AWS SDK client of the relay (DynamoDB, SQS, Step Functions, Secrets Manager).
 *
 * The SDK's defaults (@aws-sdk/client-* 3.116x, @smithy/node-http-handler 4.14, defaults mode
 * "legacy"): no connection timeout (the OS gives up a TCP connect after about 2 minutes), no request
 * timeout, no socket timeout (AWS_ENABLE_DEFAULT_SOCKET_TIMEOUT_2026=true would set 300 s for DynamoDB
 * and Secrets Manager, 900 s for SQS and Step Functions). So a half-open keep-alive socket (an instance
 * thawed after its connection died) or a stalled endpoint hung the call until the Lambda timeout
 * killed the invocation, with no error of ours and no retry. The SDK retries 3 attempts (DynamoDB 4).
 *
 * What each handler option measures (node-http-handler): `connectionTimeout` ends at the socket's
 * `connect` (DNS and TCP; not TLS). `requestTimeout` is a wall-clock timer from the attempt's start
 * to the response headers — not socket idle time — and it only logs a warning unless
 * `throwOnRequestTimeout` is true (set below). `socketTimeout` is the socket's idle timeout; it is what
 * catches a body that stops after the headers. Each fails the attempt with a `TimeoutError`, which
 * the SDK classifies as transient and retries on a new connection; after the last attempt the call
 * rejects with it (not a business error: Step Functions and the worker retry it, an API route answers 5xx).
 *
 * Values: DynamoDB, SQS, Step Functions and Secrets Manager answer in-region in tens of ms, a cold
 * instance's first call (TLS handshake on a fraction of a vCPU) in a few hundred.
 * - connect 1.1 s: the SDK's own "in-region" defaults-mode value; 0.1 s past Linux's 1 s initial
 *   SYN retransmission, so one lost SYN still connects rather than failing the attempt.
 * - request 2 s and socket idle 2 s: about 10× a slow healthy answer, so a healthy service never
 *   trips them, yet a hung attempt is dropped in seconds and retried on a fresh connection (the usual
 *   cure for a dead keep-alive socket).
 * - 3 attempts (DynamoDB's default of 4 lowered to the others'): two fresh connections after a hung one.
 * Retry mode is pinned to standard and attempts are explicit, so AWS_MAX_ATTEMPTS / AWS_RETRY_MODE
 * (or adaptive mode's client-side rate limiter) cannot lengthen a call behind the budget's back.
 *
 * A call that gets no answer at all fails after 3 × 2 s + back-off ≈ 6.2 s; the bound
 * (awsCallGiveUpMs: every attempt's headers just in time, then its body stalls) is
 * 3 × (2 s + 2 s) + back-off ≈ 12.2 s. Only a body trickling a byte every < 2 s escapes both timers
 * (no AWS endpoint does that); the Lambda timeout still bounds it.
 */
export const AWS_CLIENT_TIMEOUTS: AwsClientTimeouts = {
  connectionTimeoutMs: 1_100,
  requestTimeoutMs: 2_000,
  socketTimeoutMs: 2_000,
  maxAttempts: 3,
};

/**
 * AWS_CLIENT_TIMEOUTS, with AWS_CALL_TIMEOUT_MS as the request and socket timeouts when it is set.
 * The stack never sets it (the functions' time budgets count on AWS_CLIENT_TIMEOUTS); `npm start`
 * sets 10 s: its DynamoDB, SQS and Step Functions emulators run in the relay's own process, so on a
 * busy machine an answer waits for the same CPU as the call, and 2 s turned bursts into 503s.
 * The value is validated with the other settings at cold start (lambdas/adapters/env.ts); anything
 * but a positive integer here leaves the defaults.
 */
export const awsClientTimeouts = (env: NodeJS.ProcessEnv = process.env): AwsClientTimeouts => {
  const ms = Number(env.AWS_CALL_TIMEOUT_MS);
  return Number.isSafeInteger(ms) && ms > 0
    ? { ...AWS_CLIENT_TIMEOUTS, requestTimeoutMs: ms, socketTimeoutMs: ms }
    : AWS_CLIENT_TIMEOUTS;
};

/**
 * The SDK's standard-mode back-off (@smithy/core/retry, 2026 retry behaviour): before retry n
 * (0-based) it waits random × min(baseMs × 2^n, maxMs); base 50 ms (DynamoDB 25 ms; throttling
 * 1 s). Not ours to set: stated here for the worst case, and checked against the SDK by
 * test/unit/adapters/aws-clients.test.ts.
 */
export const SDK_RETRY_BACKOFF = { baseMs: 50, maxMs: 20_000 } as const;

/**
 * The longest an AWS call takes to fail when its endpoint stops answering: every attempt gets its
 * headers just before the request timeout, then its body stalls for the socket timeout (the connect
 * phase runs inside the request timer), plus the longest back-off before each retry.
 */
export const awsCallGiveUpMs = (t: AwsClientTimeouts = AWS_CLIENT_TIMEOUTS): number => {
  let backoffMs = 0;
  for (let n = 0; n < t.maxAttempts - 1; n += 1)
    backoffMs += Math.min(SDK_RETRY_BACKOFF.baseMs * 2 ** n, SDK_RETRY_BACKOFF.maxMs);
  return t.maxAttempts * (Math.max(t.connectionTimeoutMs, t.requestTimeoutMs) + t.socketTimeoutMs) + backoffMs;
};

/**
 * The client configuration every relay AWS SDK client is built with (spread it first:
 * `new XClient({ ...awsClientConfig(), ...ownOptions })`): awsClientTimeouts(). Tests pass smaller timeouts.
 */
export const awsClientConfig = (t: AwsClientTimeouts = awsClientTimeouts()) => ({
  maxAttempts: t.maxAttempts,
  retryMode: 'standard',
  requestHandler: {
    connectionTimeout: t.connectionTimeoutMs,
    requestTimeout: t.requestTimeoutMs,
    throwOnRequestTimeout: true,
    socketTimeout: t.socketTimeoutMs,
  },
});

let doc: DynamoDBDocumentClient | undefined;

/** The shared DynamoDB document client (undefined attributes are dropped rather than rejected). */
export const documentClient = (): DynamoDBDocumentClient => {
  doc ??= DynamoDBDocumentClient.from(traceClient(new DynamoDBClient(awsClientConfig())), {
    marshallOptions: { removeUndefinedValues: true },
  });
  return doc;
};

/**
 * Some attributes of the item `pk`, read strongly consistent ({} when the item is missing). What a
 * conditional write reads back after its condition failed: a call's own token there means the
 * write was its own, landed on an attempt whose answer was lost and retried by the SDK.
 */
export const storedAttributes = async (
  doc: DynamoDBDocumentClient,
  tableName: string,
  pk: string,
  attributes: readonly string[],
): Promise<Record<string, unknown>> => {
  const names = Object.fromEntries(attributes.map((attribute, i) => [`#a${i}`, attribute]));
  const { Item } = await doc.send(
    new GetCommand({
      TableName: tableName,
      Key: { pk },
      ConsistentRead: true,
      ProjectionExpression: Object.keys(names).join(', '),
      ExpressionAttributeNames: names,
    }),
  );
  return Item ?? {};
};

/** True for a lost conditional write (class check plus name, in case two SDK copies are bundled). */
export const isConditionalCheckFailed = (error: unknown): boolean =>
  error instanceof ConditionalCheckFailedException ||
  (error as { name?: unknown } | null)?.name === 'ConditionalCheckFailedException';
