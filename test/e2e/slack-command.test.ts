/**
 * /slack/command end to end through the local runtime (issue 21 item 4): signed with a Slack signing
 * secret, limited to one team and two users (SLACK_ALLOWED_TEAM_IDS, SLACK_ALLOWED_USER_IDS), and
 * behind the per-address rate limit. Its own runtime: the rate window is per client address and every
 * request here comes from 127.0.0.1. Nothing queued is checked in the table (dynalite) and the queue.
 */
import { createHmac } from 'node:crypto';
import { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { DynamoDBDocumentClient, ScanCommand } from '@aws-sdk/lib-dynamodb';
import { GetQueueAttributesCommand, SQSClient } from '@aws-sdk/client-sqs';
import { SLACK_TEAM_REFUSED_MESSAGE, SLACK_USER_REFUSED_MESSAGE } from '../../lambdas/handlers/api/slack-command';
import { startTestRuntime } from '../helpers/local-runtime';
import type { LocalRuntime } from '../helpers/local-runtime';
import { request } from '../helpers/receivers';

const SLACK_SECRET = 'e2e-slack-signing-secret-81c2';
const LIMIT = 8;
const LOCAL_CREDENTIALS = { accessKeyId: 'local', secretAccessKey: 'local' };

describe('Local runtime: /slack/command allowlists and rate limit', () => {
  let runtime: LocalRuntime;
  let doc: DynamoDBDocumentClient;
  let sqs: SQSClient;
  /** Requests sent so far: every one counts in the address's window. */
  let sent = 0;

  const slash = async (fields: Record<string, string>) => {
    sent += 1;
    const body = new URLSearchParams({ command: '/gpu', ...fields }).toString();
    const ts = String(Math.floor(Date.now() / 1000));
    return request(`${runtime.url}/slack/command`, {
      method: 'POST',
      headers: {
        'content-type': 'application/x-www-form-urlencoded',
        'x-slack-request-timestamp': ts,
        'x-slack-signature': `v0=${createHmac('sha256', SLACK_SECRET).update(`v0:${ts}:${body}`).digest('hex')}`,
      },
      body,
    });
  };
  const itemsWithPrefix = async (prefix: string): Promise<number> => {
    const out = await doc.send(
      new ScanCommand({
        TableName: runtime.dynamo.tableName,
        FilterExpression: 'begins_with(pk, :p)',
        ExpressionAttributeValues: { ':p': prefix },
      }),
    );
    return out.Count ?? 0;
  };
  const queuedJobs = async (): Promise<number> => {
    const out = await sqs.send(
      new GetQueueAttributesCommand({
        QueueUrl: runtime.sqs.queueUrl,
        AttributeNames: ['ApproximateNumberOfMessages', 'ApproximateNumberOfMessagesNotVisible'],
      }),
    );
    return (
      Number(out.Attributes?.ApproximateNumberOfMessages ?? 0) +
      Number(out.Attributes?.ApproximateNumberOfMessagesNotVisible ?? 0)
    );
  };

  beforeAll(async () => {
    runtime = await startTestRuntime({
      dialect: 'spec',
      env: {
        SLACK_SIGNING_SECRET: SLACK_SECRET,
        SLACK_ALLOWED_TEAM_IDS: 'T0OURS',
        SLACK_ALLOWED_USER_IDS: 'U0ALICE,U0BOB',
        MAX_REQUESTS_PER_MINUTE: String(LIMIT),
      },
    });
    doc = DynamoDBDocumentClient.from(
      new DynamoDBClient({ endpoint: runtime.dynamo.endpoint, region: 'us-east-1', credentials: LOCAL_CREDENTIALS }),
    );
    sqs = new SQSClient({ endpoint: runtime.sqs.endpoint, region: 'us-east-1', credentials: LOCAL_CREDENTIALS });
  });
  afterAll(async () => {
    await runtime?.close();
  });

  it('refuses a signed command from another workspace ephemerally and queues nothing', async () => {
    const res = await slash({ text: 'cancel 77', team_id: 'T0OTHER', user_id: 'U0ALICE', trigger_id: 'trig-1' });
    expect(res.status).toBe(200);
    expect(res.json).toEqual({ response_type: 'ephemeral', text: SLACK_TEAM_REFUSED_MESSAGE });
    expect(await itemsWithPrefix('TASK#')).toBe(0);
    expect(await itemsWithPrefix('IDEM#')).toBe(0);
    expect(await queuedJobs()).toBe(0);
  });

  it('refuses a user of the allowed workspace who is not on the user list, and queues nothing', async () => {
    const res = await slash({ text: 'cancel 77', team_id: 'T0OURS', user_id: 'U0MALLORY', trigger_id: 'trig-2' });
    expect(res.json).toEqual({ response_type: 'ephemeral', text: SLACK_USER_REFUSED_MESSAGE });
    expect(await itemsWithPrefix('TASK#')).toBe(0);
    expect(await queuedJobs()).toBe(0);
  });

  it('queues the command of a listed user of the allowed workspace', async () => {
    const res = await slash({ text: 'status', team_id: 'T0OURS', user_id: 'U0ALICE', trigger_id: 'trig-3' });
    expect(res.status).toBe(200);
    expect(res.json).toMatchObject({
      response_type: 'in_channel',
      text: expect.stringMatching(/^Status check queued\. Task ID: /),
    });
    expect(await itemsWithPrefix('TASK#')).toBe(1);
  });

  it('starts the create-order workflow for a rent command of a listed user', async () => {
    // Act: the route's own Step Functions grant (states:StartExecution), checked by the local IAM checks
    const res = await slash({ text: 'rent A100', team_id: 'T0OURS', user_id: 'U0BOB', trigger_id: 'trig-5' });

    // Assert
    expect(res.status).toBe(200);
    expect(res.json).toMatchObject({
      response_type: 'in_channel',
      text: expect.stringMatching(/^Renting A100: queued\. Task ID: /),
    });
    expect(await itemsWithPrefix('TASK#')).toBe(2);
  });

  it('answers 429 Rate limit exceeded with Retry-After once the address has its limit, refused commands included', async () => {
    while (sent < LIMIT) {
      const res = await slash({ text: 'status', team_id: 'T0OTHER', user_id: 'U0ALICE' });
      expect(res.status).toBe(200);
    }
    const tasksBefore = await itemsWithPrefix('TASK#');
    const limited = await slash({ text: 'status', team_id: 'T0OURS', user_id: 'U0BOB', trigger_id: 'trig-4' });
    expect(limited.status).toBe(429);
    expect(limited.json).toEqual({ error: 'Rate limit exceeded' });
    expect(Number(limited.headers.get('retry-after'))).toBeGreaterThan(0);
    expect(await itemsWithPrefix('TASK#')).toBe(tasksBefore);
  });
});
