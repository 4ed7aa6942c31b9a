import { DynamoDbIdempotencyStore } from '../../../lambdas/adapters/dynamodb/dynamodb-idempotency-store';
import { DynamoDbServerClaims } from '../../../lambdas/adapters/dynamodb/dynamodb-server-claims';
import { DynamoDbSlidingWindow } from '../../../lambdas/adapters/dynamodb/dynamodb-sliding-window';
import { DynamoDbTaskRepository } from '../../../lambdas/adapters/dynamodb/dynamodb-task-repository';
import { relayEnvSchema } from '../../../lambdas/adapters/env';
import { REQUIRED_ENV } from '../../fakes/env';
import {
  idempotencyStoreFromEnv,
  jobQueueFromEnv,
  serverClaimsFromEnv,
  slidingWindowFromEnv,
  taskRepositoryFromEnv,
  workflowStarterFromEnv,
} from '../../../lambdas/adapters/from-env';
import { notifierFromEnv } from '../../../lambdas/adapters/notifier-from-env';
import { HttpNotifier } from '../../../lambdas/adapters/http-notifier';
import { SfnWorkflowStarter } from '../../../lambdas/adapters/sfn-workflow-starter';
import { SqsJobQueue } from '../../../lambdas/adapters/sqs-job-queue';
import { startReceiver } from './receiver';

describe('Module: from-env', () => {
  const env = (vars: Record<string, string> = {}) =>
    relayEnvSchema().parse({ ...REQUIRED_ENV, TABLE_NAME: 't', ...vars });

  it('builds the DynamoDB adapters on the configured table', () => {
    expect(taskRepositoryFromEnv(env())).toBeInstanceOf(DynamoDbTaskRepository);
    expect(slidingWindowFromEnv(env())).toBeInstanceOf(DynamoDbSlidingWindow);
    expect(serverClaimsFromEnv(env())).toBeInstanceOf(DynamoDbServerClaims);
    expect(idempotencyStoreFromEnv(env())).toBeInstanceOf(DynamoDbIdempotencyStore);
  });

  it('names the missing variable for the workflow starter and job queue', () => {
    expect(() => workflowStarterFromEnv(env())).toThrow('STATE_MACHINE_ARN');
    expect(() => jobQueueFromEnv(env())).toThrow('JOB_QUEUE_URL');
    expect(
      workflowStarterFromEnv(env({ STATE_MACHINE_ARN: 'arn:aws:states:us-east-1:1:stateMachine:x' })),
    ).toBeInstanceOf(SfnWorkflowStarter);
    expect(jobQueueFromEnv(env({ JOB_QUEUE_URL: 'http://127.0.0.1:1/000000000000/jobs' }))).toBeInstanceOf(SqsJobQueue);
  });

  it('builds a notifier that signs with CALLBACK_SIGNING_SECRET (never WEBHOOK_SECRET) and honours ALLOW_PRIVATE_CALLBACKS', async () => {
    const receiver = await startReceiver();
    try {
      const key = `whsec_${Buffer.alloc(32, 3).toString('base64')}`;
      const webhookOnly = notifierFromEnv(env({ WEBHOOK_SECRET: 's', ALLOW_PRIVATE_CALLBACKS: 'true' }));
      expect(await webhookOnly.callback(`${receiver.base}/cb`, 't0', { success: false, error: 'x' })).toBe(false);
      const open = notifierFromEnv(
        env({
          WEBHOOK_SECRET: 's',
          CALLBACK_SIGNING_SECRET: key,
          ALLOW_PRIVATE_CALLBACKS: 'true',
          SLACK_WEBHOOK_URL: `${receiver.base}/slack`,
        }),
      );
      const guarded = notifierFromEnv(
        env({ WEBHOOK_SECRET: 's', CALLBACK_SIGNING_SECRET: key, ALLOW_PRIVATE_CALLBACKS: 'false' }),
      );
      expect(open).toBeInstanceOf(HttpNotifier);
      expect(await open.callback(`${receiver.base}/cb`, 't1', { success: false, error: 'x' })).toBe(true);
      await open.chat('hi');
      expect(await guarded.callback(`${receiver.base}/cb`, 't2', { success: false, error: 'x' })).toBe(false);
      expect(receiver.requests.map((r) => r.path)).toEqual(['/cb', '/slack']);
    } finally {
      await receiver.close();
    }
  });
});
