/**
 * Logs that tell the truth (issue 40 §4): two functions invoked one after the other in one process
 * (as the local runtime runs them, and as a warm Lambda instance serves one invocation after another),
 * and the lines each wrote. The second invocation's lines carry its own function name and none of the
 * first's keys (task_id, job_kind); a caller's mistake is WARN without a stack, a fault ERROR with it.
 */
import '../../helpers/debug-logs';
import { createCreateOrderHandler } from '../../../lambdas/handlers/api/create-order';
import { createGetTaskHandler } from '../../../lambdas/handlers/api/get-task';
import { createJobWorkerHandler } from '../../../lambdas/handlers/worker/job-worker';
import { createFindServerStepHandler } from '../../../lambdas/handlers/workflow/find-server';
import { MarketplaceAuthError, MarketplaceInvalidInputError } from '../../../lambdas/domain/errors';
import { logger } from '../../../lambdas/adapters/observability';
import { apiEvent, lambdaContext, sign, signedPost } from '../../fixtures/events/api-event';
import { aServer, aState } from '../../fakes/builders';
import { FakeClaims } from '../../fakes/claims';
import { acceptFakes, jobFakes } from '../../fakes/deps';
import { apiEnv, SECRET } from '../../fakes/env';
import { FakeMarketplace } from '../../fakes/marketplace';
import { FakeVisibility } from '../../fakes/message-visibility';
import { FakeSlidingWindow } from '../../fakes/sliding-window';
import { anSqsEvent, anSqsRecord } from '../../fakes/sqs';
import { FakeTasks } from '../../fakes/tasks';
import { loggedLines, type LogLine } from '../../helpers/log-capture';

const NOW = 1_700_000_000_000;
/** The workflow tests' clock: inside aState()'s soft deadline. */
const WORKFLOW_NOW = 5_000_000;

/** The FindServer task of `taskId`, invoked as the function `local-find-server`. */
const findServer = async (taskId: string): Promise<void> => {
  const marketplace = new FakeMarketplace();
  marketplace.servers = [aServer(3)];
  const handler = createFindServerStepHandler(
    () => ({ marketplace, claims: new FakeClaims(), tasks: new FakeTasks() }),
    () => WORKFLOW_NOW,
  );
  await handler({ ...aState(), task_id: taskId }, lambdaContext('local-find-server'));
};

/**
 * The job worker on one cancel-order job of `orderId`, invoked as `local-job-worker`; the marketplace
 * refuses the cancel with `cancelError` (by default as for an order the account does not have).
 */
const cancelJob = async (
  taskId: string,
  orderId: number,
  cancelError: Error = new MarketplaceInvalidInputError(),
): Promise<void> => {
  const fakes = jobFakes();
  fakes.marketplace.cancelError = cancelError;
  fakes.tasks.seed(taskId, { kind: 'cancel-order' });
  const worker = createJobWorkerHandler({ ...fakes.deps, visibility: new FakeVisibility(), now: () => NOW });
  const job = { task_id: taskId, kind: 'cancel-order', input: { order_id: orderId }, origin: { source: 'webhook' } };
  // The last attempt: a failure is reported to the caller at once, whatever its kind.
  await worker(anSqsEvent(anSqsRecord(job, 'm-1', 4)), lambdaContext('local-job-worker'));
};

/** GET /webhook/tasks/{id} of a task id the route refuses (400), invoked as `local-GetTask`. */
const getMalformedTask = async (): Promise<number> => {
  const handler = createGetTaskHandler(() => ({
    env: apiEnv(),
    window: new FakeSlidingWindow(),
    webhookSecrets: async () => [SECRET],
    tasks: new FakeTasks(),
    now: () => NOW,
  }));
  const path = '/webhook/tasks/not-a-task-id';
  const answer = await handler(
    apiEvent({
      method: 'GET',
      path,
      pathParameters: { task_id: 'not-a-task-id' },
      headers: { 'x-webhook-signature': sign(SECRET, path) },
    }),
    lambdaContext('local-GetTask'),
  );
  return typeof answer === 'object' ? (answer.statusCode ?? 0) : 0;
};

/** POST /webhook/create-order whose workflow cannot start (503), invoked as `local-CreateOrder`. */
const createOrderWithoutWorkflow = async (): Promise<number> => {
  const { fakes, deps } = acceptFakes();
  fakes.workflow.fail = new Error('ExecutionLimitExceeded');
  const handler = createCreateOrderHandler(() => deps);
  const answer = await handler(
    signedPost(SECRET, '/webhook/create-order', '{"gpu_type":"A100"}'),
    lambdaContext('local-CreateOrder'),
  );
  return typeof answer === 'object' ? (answer.statusCode ?? 0) : 0;
};

/** The lines of the invocation that logged `message` (by its request id). */
const invocationOf = (lines: readonly LogLine[], message: string): LogLine[] => {
  const first = lines.find((line) => line.message === message);
  if (!first) throw new Error(`no line "${message}" among ${lines.map((line) => String(line.message)).join(' | ')}`);
  return lines.filter((line) => line.function_request_id === first.function_request_id);
};

const errorOf = (line: LogLine | undefined): Record<string, unknown> => (line?.error ?? {}) as Record<string, unknown>;

describe('Logs: one invocation after another', () => {
  it("gives a workflow task's lines its own function name, not the API function's invoked before it", async () => {
    // Act
    const lines = await loggedLines(async () => {
      await createOrderWithoutWorkflow();
      await findServer('task-found');
    });
    // Assess
    const found = invocationOf(lines, 'server chosen');
    expect(found.map((line) => [line.function_name, line.task_id])).toEqual([['local-find-server', 'task-found']]);
  });

  it("keeps the task id of one invocation off the next one's lines (the 503 after a workflow task)", async () => {
    // Act
    const lines = await loggedLines(async () => {
      await findServer('task-before');
      expect(await createOrderWithoutWorkflow()).toBe(503);
    });
    // Assess
    const refused = invocationOf(lines, 'hand-off failed; nothing was queued');
    expect(refused.length).toBeGreaterThan(0);
    for (const line of refused) {
      expect(line.function_name).toBe('local-CreateOrder');
      expect(line).not.toHaveProperty('task_id');
    }
  });

  it("keeps the worker's task id, job kind and function name off the next API request's lines", async () => {
    // Act
    const lines = await loggedLines(async () => {
      await cancelJob('task-cancel', 99999);
      expect(await getMalformedTask()).toBe(400);
    });
    // Assess
    const job = invocationOf(lines, 'job finished');
    expect(job.every((line) => line.function_name === 'local-job-worker' && line.task_id === 'task-cancel')).toBe(true);
    const request = invocationOf(lines, 'request refused');
    for (const line of request) {
      expect(line.function_name).toBe('local-GetTask');
      expect(line).not.toHaveProperty('task_id');
      expect(line).not.toHaveProperty('job_kind');
    }
  });

  it('labels every line of a job with its task id and job kind, and no line after the invocation', async () => {
    // Act
    const lines = await loggedLines(async () => {
      await cancelJob('task-job', 99999);
      logger.info('after the invocation');
    });
    // Assess
    const after = lines.filter((line) => line.message === 'after the invocation');
    const job = lines.filter((line) => line.message !== 'after the invocation');
    expect(job.length).toBeGreaterThan(1);
    for (const line of job) {
      expect(line).toMatchObject({ function_name: 'local-job-worker', task_id: 'task-job', job_kind: 'cancel-order' });
    }
    expect(after).toHaveLength(1);
    for (const key of ['task_id', 'job_kind', 'function_name']) expect(after[0]).not.toHaveProperty(key);
  });

  it('keeps concurrent invocations apart (the local runtime runs them in one process)', async () => {
    // Act
    const lines = await loggedLines(() =>
      Promise.all([findServer('task-a'), cancelJob('task-b', 99999), findServer('task-c'), getMalformedTask()]),
    );
    // Assess
    const labels = new Set(lines.map((line) => `${String(line.function_name)} ${String(line.task_id)}`));
    expect([...labels].sort()).toEqual([
      'local-GetTask undefined',
      'local-find-server task-a',
      'local-find-server task-c',
      'local-job-worker task-b',
    ]);
  });

  it('logs a caller error at WARN without a stack: a 4xx answer, a cancel of an order that is not the account’s', async () => {
    // Act
    const lines = await loggedLines(async () => {
      await cancelJob('task-typo', 99999);
      await getMalformedTask();
    });
    // Assess
    const failed = lines.find((line) => line.message === 'job failed; sending the failure result');
    expect(failed).toMatchObject({
      level: 'WARN',
      error: { name: 'MarketplaceInvalidInputError', message: "order 99999 is not one of this account's orders" },
    });
    expect(errorOf(failed)).not.toHaveProperty('stack');
    const refused = lines.find((line) => line.message === 'request refused');
    expect(refused).toMatchObject({ level: 'WARN', statusCode: 400, error: 'Invalid task_id' });
    expect(lines.filter((line) => line.level === 'ERROR')).toEqual([]);
    expect(lines.filter((line) => JSON.stringify(line).includes('"stack"'))).toEqual([]);
  });

  it('logs a fault at ERROR with its stack: a refused API key, a hand-off that failed', async () => {
    // Act
    const lines = await loggedLines(async () => {
      await cancelJob('task-fault', 5, new MarketplaceAuthError());
      await createOrderWithoutWorkflow();
    });
    // Assess
    const failed = lines.find((line) => line.message === 'job failed; sending the failure result');
    expect(failed).toMatchObject({ level: 'ERROR', error: { name: 'MarketplaceAuthError' } });
    expect(errorOf(failed).stack).toEqual(expect.stringContaining('MarketplaceAuthError'));
    const handOff = lines.find((line) => line.message === 'hand-off failed; nothing was queued');
    expect(handOff).toMatchObject({ level: 'ERROR', error: { name: 'HandOffError' } });
    expect(errorOf(handOff).stack).toEqual(expect.any(String));
  });
});
