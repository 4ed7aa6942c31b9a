/**
 * Stopping the local DynamoDB while handlers still write (Ctrl-C during a job): the writes in
 * progress finish, and the process does not die of dynalite's "Database is closed".
 */
import { DynamoDBClient, GetItemCommand, UpdateItemCommand } from '@aws-sdk/client-dynamodb';
import { startLocalDynamo } from '../../../local/dynalite';

describe('local DynamoDB close()', () => {
  it('lets the requests in progress finish before it closes the store', async () => {
    const dynamo = await startLocalDynamo({});
    const client = new DynamoDBClient({
      endpoint: dynamo.endpoint,
      region: 'us-east-1',
      credentials: { accessKeyId: 'local', secretAccessKey: 'local' },
      maxAttempts: 1,
    });
    try {
      // 50 increments of one item queue on its lock; close once the first has been answered.
      const writes = Array.from({ length: 50 }, () =>
        client
          .send(
            new UpdateItemCommand({
              TableName: dynamo.tableName,
              Key: { pk: { S: 'COUNTER' } },
              UpdateExpression: 'ADD n :one',
              ExpressionAttributeValues: { ':one': { N: '1' } },
            }),
          )
          .then(
            () => 'written',
            (error: Error) => error.name,
          ),
      );
      await writes[0];
      await dynamo.close();
      const outcomes = await Promise.all(writes);
      // Every write sent before the close was answered: none lost half-way, none crashed the process.
      expect(outcomes.filter((o) => o === 'written')).toHaveLength(50);
      // And the store is closed: a request now finds nobody listening.
      await expect(
        client.send(new GetItemCommand({ TableName: dynamo.tableName, Key: { pk: { S: 'COUNTER' } } })),
      ).rejects.toThrow();
    } finally {
      client.destroy();
    }
  });
});
