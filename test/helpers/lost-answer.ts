/**
 * A document client for dynalite whose next answers to a chosen operation get lost: the request is
 * executed, then its attempt fails with a `TimeoutError` (what awsClientConfig's request timeout
 * throws), so the SDK's own retry strategy sends the same request again. This is "the write landed,
 * its answer was lost, the SDK retried it": a conditional write then fails its own condition.
 *
 * The client is built like the relay's (awsClientConfig: standard retry mode, 3 attempts); the loss
 * is a middleware inside the retry loop, after deserialization, so everything else is the real SDK.
 */
import { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import { awsClientConfig } from '../../lambdas/adapters/aws-clients';
import type { LocalDynamo } from './dynalite';

export interface LostAnswerClient {
  readonly doc: DynamoDBDocumentClient;
  /**
   * Loses the answer of the next `times` executed `operation` calls (e.g. 'UpdateItem', 'PutItem'),
   * of those whose low-level input `matches` (default: all).
   */
  loseNext(operation: string, times?: number, matches?: (input: Record<string, unknown>) => boolean): void;
  /** Answers lost so far. */
  lost(): number;
  /** Attempts sent per operation (retries included). */
  readonly attempts: Map<string, number>;
  close(): void;
}

export const lostAnswerClient = (db: Pick<LocalDynamo, 'endpoint'>): LostAnswerClient => {
  const client = new DynamoDBClient({
    ...awsClientConfig({ connectionTimeoutMs: 1_000, requestTimeoutMs: 5_000, socketTimeoutMs: 5_000, maxAttempts: 3 }),
    endpoint: db.endpoint,
    region: process.env.AWS_REGION ?? 'us-east-1',
    credentials: { accessKeyId: 'test', secretAccessKey: 'test' },
  });
  let armed: { operation: string; left: number; matches: (input: Record<string, unknown>) => boolean } | undefined;
  let lost = 0;
  const attempts = new Map<string, number>();
  client.middlewareStack.add(
    (next, context) => async (args) => {
      const operation = String(context.commandName ?? '').replace(/Command$/, '');
      attempts.set(operation, (attempts.get(operation) ?? 0) + 1);
      const lose = (): boolean => {
        if (
          !armed ||
          armed.operation !== operation ||
          armed.left <= 0 ||
          !armed.matches(args.input as Record<string, unknown>)
        )
          return false;
        armed.left -= 1;
        lost += 1;
        return true;
      };
      const timeout = () =>
        Object.assign(new Error(`${operation}: answer lost after the write (simulated)`), {
          name: 'TimeoutError',
          $metadata: {},
        });
      let out: Awaited<ReturnType<typeof next>>;
      try {
        out = await next(args);
      } catch (error) {
        // A later attempt's answer (its failed condition, say) can be lost too: `loseNext(op, 3)`.
        if (lose()) throw timeout();
        throw error;
      }
      if (lose()) throw timeout();
      return out;
    },
    { step: 'deserialize', priority: 'high', name: 'loseAnswerAfterWrite' },
  );
  return {
    doc: DynamoDBDocumentClient.from(client, { marshallOptions: { removeUndefinedValues: true } }),
    loseNext: (operation, times = 1, matches = () => true) => {
      armed = { operation, left: times, matches };
    },
    lost: () => lost,
    attempts,
    close: () => client.destroy(),
  };
};
