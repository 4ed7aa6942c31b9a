/**
 * Items read by key in bulk (BatchGetItem, never a Scan): the host records listed by GET
 * /webhook/hosts, the spend days of GET /webhook/spend.
 */
import { BatchGetCommand, type DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';

/** BatchGetItem takes at most 100 keys. */
const BATCH_SIZE = 100;
/** Rounds of unprocessed keys retried per batch before giving up (DynamoDB throttling). */
const MAX_ROUNDS = 10;

/**
 * The items of the keys `pks` that exist, 100 keys a call, unprocessed keys retried for up to
 * MAX_ROUNDS rounds a batch; then an error naming `what` could not be read. Eventually consistent.
 */
export const batchGetItems = async (
  doc: DynamoDBDocumentClient,
  tableName: string,
  pks: readonly string[],
  what: string,
): Promise<Record<string, unknown>[]> => {
  const items: Record<string, unknown>[] = [];
  for (let i = 0; i < pks.length; i += BATCH_SIZE) {
    let request: Record<string, { Keys: Record<string, unknown>[] }> | undefined = {
      [tableName]: { Keys: pks.slice(i, i + BATCH_SIZE).map((pk) => ({ pk })) },
    };
    for (let round = 0; request?.[tableName]?.Keys.length; round += 1) {
      if (round >= MAX_ROUNDS) throw new Error(`${what} could not be read (throttled); try again`);
      const answer = await doc.send(new BatchGetCommand({ RequestItems: request }));
      items.push(...(answer.Responses?.[tableName] ?? []));
      request = answer.UnprocessedKeys as typeof request;
    }
  }
  return items;
};
