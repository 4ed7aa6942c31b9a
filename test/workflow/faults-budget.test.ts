/**
 * Time-budget faults on the create-order workflow (issue 13, items 2 and 7): the synthesized ASL run
 * by LocalStepFunctions, with every task handler invoked like Lambda does it: a context whose
 * remaining time counts down from the function's (scaled-down) timeout, and a hard stop at that
 * timeout that fails the invocation with Lambda's `Sandbox.Timedout`.
 *
 * Checked: the task ends with exactly one result, no execution ends FAILED, and (for the budget
 * cases) no function ever reached its timeout: each one gave up on its own in time to record the
 * outcome. Without the budgets, the hanging receiver and the slow marketplace outlast the functions.
 */
import type { Context } from 'aws-lambda';
import { synthesizeWorkflowAsl } from '../../local/asl';
import { LocalStepFunctions } from '../../local/stepfunctions';
import { startSimulator, type Fault, type MarketplaceSimulator } from '../../local/simulator/marketplace-simulator';
import { HttpMarketplaceClient } from '../../lambdas/marketplace/http-marketplace-client';
import { InMemoryPacingGate } from '../../lambdas/marketplace/in-memory-pacing-gate';
import { DynamoDbTaskRepository } from '../../lambdas/adapters/dynamodb/dynamodb-task-repository';
import { DynamoDbLeaseStore } from '../../lambdas/adapters/dynamodb/dynamodb-lease-store';
import { DynamoDbServerClaims } from '../../lambdas/adapters/dynamodb/dynamodb-server-claims';
import { DynamoDbSlidingWindow } from '../../lambdas/adapters/dynamodb/dynamodb-sliding-window';
import { HttpNotifier } from '../../lambdas/adapters/http-notifier';
import { budgetedHandler, remainingMs } from '../../lambdas/adapters/invocation-budget';
import { createFindServerStepHandler } from '../../lambdas/handlers/workflow/find-server';
import { createReserveQuotaStepHandler } from '../../lambdas/handlers/workflow/reserve-quota';
import { createPlaceOrderStepHandler } from '../../lambdas/handlers/workflow/place-order';
import { createCheckOrderStepHandler } from '../../lambdas/handlers/workflow/check-order';
import { createCancelOrderStepHandler } from '../../lambdas/handlers/workflow/cancel-order';
import { createReportResultStepHandler } from '../../lambdas/handlers/workflow/report-result';
import { createExecutionEndedHandler } from '../../lambdas/handlers/workflow/execution-ended';
import { WORKFLOW_TASKS, type WorkflowTaskName } from '../../contract/routes';
import type { CreateOrderInput, TaskRecord } from '../../lambdas/domain/task';
import type { CreateOrderWorkflowInput, MarketplaceClient } from '../../lambdas/domain/ports';
import { startDynalite, type LocalDynamo } from '../helpers/dynalite';
import { startReceiver, TEST_CALLBACK_SECRET, type Receiver } from '../helpers/receivers';
import { NATIVE, nextTaskId, testServer } from './harness';
import { workflowRequest } from '../../lambdas/domain/requests/accept-task';
import { placementWaits } from '../fakes/placement-intents';
import { DynamoDbPlacementIntents } from '../../lambdas/adapters/dynamodb/dynamodb-placement-intents';

/** Scaled-down Lambda timeouts (ms): shorter than each function's unbudgeted worst case below. */
const TIMEOUT_MS: Record<WorkflowTaskName, number> = {
  FindServer: 5_000,
  ReserveQuota: 5_000,
  PlaceOrder: 8_000,
  CheckOrder: 5_000,
  CancelOrder: 8_000,
  // Callback: 3 attempts × 2 s without a budget, plus chat 2 s: more than 7 s. Not less than 7 s: a
  // callback gets the time left less the reserve (1 s) and one chat post (2 s), and an attempt needs
  // 0.5 s of it (the notifier's minAttemptMs); at 4 s the record writes before the callback, slow on a
  // loaded machine, left too little and the result was recorded but never delivered (load ~14).
  ReportResult: 7_000,
};
/** Marketplace per-attempt timeout: 3 attempts of a read (2 network retries) take 6 s without a budget. */
const MARKETPLACE_TIMEOUT_MS = 2_000;
/** Holds an answer for good (as far as any test here is concerned). */
const HANG_MS = 60_000;

class SandboxTimedoutError extends Error {
  public constructor(ms: number) {
    super(`Task timed out after ${(ms / 1000).toFixed(2)} seconds`);
    this.name = 'Sandbox.Timedout';
  }
}

describe('Faults: time budgets in the create-order workflow', () => {
  let sim: MarketplaceSimulator;
  let dynamo: LocalDynamo;
  let callback: Receiver;
  let slack: Receiver;
  let sfn: LocalStepFunctions;
  let tasks: DynamoDbTaskRepository;
  let claims: DynamoDbServerClaims;
  /** Functions that reached their timeout, in order. */
  const timedOut: string[] = [];
  /** Test hooks run at the start of a handler (by state name): throw or hang once to inject a fault. */
  const hooks: Partial<Record<WorkflowTaskName, () => Promise<void>>> = {};
  let serverId = 40_000;

  /** Invokes `fn` as Lambda would: a budgeted context, and Sandbox.Timedout at the timeout. */
  const lambda = (name: WorkflowTaskName, fn: (input: unknown) => Promise<unknown>) => {
    const budgeted = budgetedHandler(async (input: unknown, _context: Context) => {
      const hook = hooks[name];
      if (hook) {
        delete hooks[name];
        await hook();
      }
      return fn(input);
    });
    return async (input: unknown): Promise<unknown> => {
      const deadline = Date.now() + TIMEOUT_MS[name];
      const context = { getRemainingTimeInMillis: () => Math.max(0, deadline - Date.now()) } as unknown as Context;
      let timer: NodeJS.Timeout | undefined;
      const stop = new Promise<never>((_, reject) => {
        timer = setTimeout(() => {
          timedOut.push(name);
          reject(new SandboxTimedoutError(TIMEOUT_MS[name]));
        }, TIMEOUT_MS[name]);
      });
      try {
        return await Promise.race([budgeted(input, context), stop]);
      } finally {
        clearTimeout(timer);
      }
    };
  };

  beforeAll(async () => {
    let asl: object;
    let functionForState: Record<string, string>;
    [{ asl, functionForState }, sim, dynamo, callback, slack] = await Promise.all([
      synthesizeWorkflowAsl(),
      startSimulator({ port: 0, seed: 11, readyDelayMs: 200, rateLimit: false }),
      startDynalite(),
      startReceiver(),
      startReceiver(),
    ]);
    const http = new HttpMarketplaceClient({
      baseUrl: sim.url,
      apiKey: async () => sim.apiKey,
      pacing: new InMemoryPacingGate(),
      minIntervalMs: 0,
      createIntervalMs: 0,
      timeoutMs: MARKETPLACE_TIMEOUT_MS,
      baseBackoffMs: 10,
      maxBackoffMs: 50,
      // As marketplace-from-env.ts wires it, with reserves scaled to the timeouts.
      remainingMs: () => remainingMs() - 300,
      reserveMs: 500,
    });
    const marketplace: MarketplaceClient = {
      listServers: () => http.listServers(),
      listWallets: () => http.listWallets(),
      createOrder: (request) => http.createOrder(request),
      listOrders: (opts) => http.listOrders(opts),
      cancelOrder: (id) => http.cancelOrder(id),
      setSpotPrice: (id, price) => http.setSpotPrice(id, price),
      spotMarket: (id) => http.spotMarket(id),
    };
    tasks = new DynamoDbTaskRepository(dynamo.doc, dynamo.tableName);
    claims = new DynamoDbServerClaims(dynamo.doc, dynamo.tableName);
    const quota = new DynamoDbSlidingWindow(dynamo.doc, dynamo.tableName);
    const notifier = new HttpNotifier({
      signingSecrets: async () => [TEST_CALLBACK_SECRET],
      chat: async () => ({ slack: `${slack.url}/slack` }),
      allowPrivate: true,
      callbackTimeoutMs: 2_000,
      chatTimeoutMs: 2_000,
      callbackAttempts: 3,
      callbackBackoffMs: 10,
      // As notifier-from-env.ts wires it, with the reserve scaled to the timeouts.
      remainingMs,
      reserveMs: 1_000,
    });
    const byEntry: Record<string, (input: unknown) => Promise<unknown>> = {
      [WORKFLOW_TASKS.FindServer]: lambda(
        'FindServer',
        createFindServerStepHandler(() => ({ marketplace, claims, tasks })),
      ),
      [WORKFLOW_TASKS.ReserveQuota]: lambda(
        'ReserveQuota',
        createReserveQuotaStepHandler(() => ({ quota, maxOrdersPerHour: 1_000 })),
      ),
      [WORKFLOW_TASKS.PlaceOrder]: lambda(
        'PlaceOrder',
        createPlaceOrderStepHandler(() => ({
          marketplace,
          tasks,
          claims,
          ...placementWaits(new DynamoDbPlacementIntents(dynamo.doc, dynamo.tableName)),
        })),
      ),
      [WORKFLOW_TASKS.CheckOrder]: lambda(
        'CheckOrder',
        createCheckOrderStepHandler(() => ({ marketplace })),
      ),
      [WORKFLOW_TASKS.CancelOrder]: lambda(
        'CancelOrder',
        createCancelOrderStepHandler(() => ({ marketplace, tasks })),
      ),
      [WORKFLOW_TASKS.ReportResult]: lambda(
        'ReportResult',
        createReportResultStepHandler(() => ({
          tasks,
          notifier,
          claims,
          leases: new DynamoDbLeaseStore(dynamo.doc, dynamo.tableName),
        })),
      ),
    };
    const executionEnded = createExecutionEndedHandler(() => ({ marketplace, tasks, notifier, claims }));
    sfn = new LocalStepFunctions({
      asl,
      handlers: Object.fromEntries(Object.entries(functionForState).map(([state, entry]) => [state, byEntry[entry]])),
      onExecutionEnded: (event) => executionEnded(event),
      waitTimeOverrides: { WaitForReady: 100 },
      retryIntervalOverrides: Object.fromEntries(Object.keys(functionForState).map((state) => [state, 20])),
    });
  });

  afterAll(async () => {
    await sfn.close();
    await Promise.all([sim.close(), dynamo.close(), callback.close(), slack.close()]);
  });

  afterEach(() => {
    callback.setBehaviour({});
    slack.setBehaviour({});
    sim.control.clearFaults();
    timedOut.length = 0;
    for (const name of Object.keys(hooks) as WorkflowTaskName[]) delete hooks[name];
  });

  /** Runs one task against one fresh matching server. */
  const runTask = async (label: string, faults: readonly Fault[] = []) => {
    serverId += 1;
    sim.control.reset();
    sim.control.setReadyDelay(200);
    sim.control.addServer(testServer(serverId));
    for (const fault of faults) sim.control.inject(fault);
    const taskId = nextTaskId(label);
    const now = Date.now();
    const request: CreateOrderInput = {
      gpu_type: 'z9000',
      image: 'nvidia/cuda:12.4.1-base-ubuntu22.04',
      currency: NATIVE,
      ports: { '22': 'tcp' },
      use_spot: true,
      callback_url: `${callback.url}/hook/${taskId}`,
    };
    await tasks.create({
      task_id: taskId,
      kind: 'create-order',
      state: 'queued',
      request: { ...request },
      origin: { source: 'webhook' },
      created_at: new Date(now).toISOString(),
      updated_at: new Date(now).toISOString(),
    });
    const input: CreateOrderWorkflowInput = {
      task_id: taskId,
      request: workflowRequest(request),
      origin: { source: 'webhook' },
      timing: { poll_interval_seconds: 1, ready_timeout_seconds: 120, soft_deadline: Math.floor(now / 1000) + 300 },
    };
    const { executionArn } = sfn.startExecution(taskId, input);
    const execution = await sfn.waitForExecution(executionArn);
    const record: TaskRecord | undefined = await tasks.get(taskId);
    const deliveries = callback.requests.filter((r) => r.path.endsWith(`/${taskId}`));
    return { taskId, execution, record, deliveries };
  };

  it('a callback receiver that hangs: ReportResult gives up in time, announces the order and releases the claim', async () => {
    // Prepare
    callback.setBehaviour({ delayMs: HANG_MS });
    const slackBefore = slack.requests.length;
    // Act
    const { execution, record, deliveries } = await runTask('budget-cb-hang');
    // Assess: one result, recorded; the execution SUCCEEDED; ReportResult never hit its timeout.
    expect(execution.status).toBe('SUCCEEDED');
    expect(record).toMatchObject({ state: 'succeeded', result: { success: true } });
    expect(timedOut).toEqual([]);
    expect(deliveries.length).toBeGreaterThanOrEqual(1);
    expect(new Set(deliveries.map((d) => d.headers['webhook-id'])).size).toBe(1);
    // The ready announcement went out once, and the server is free again.
    expect(slack.requests.length - slackBefore).toBe(1);
    expect(await claims.claim(serverId, 'another-task', Date.now(), 60)).toBe(true);
    expect(sim.control.orders()).toHaveLength(1);
  });

  it('a marketplace that answers slowly: the steps give up before their timeouts and the task fails once', async () => {
    // Prepare: every listing answer is held far beyond the client's timeout.
    const slow: Fault = { endpoint: 'marketplace', kind: 'slow', delayMs: HANG_MS, times: 10_000 };
    // Act
    const { execution, record, deliveries } = await runTask('budget-mp-slow', [slow]);
    // Assess
    expect(execution.status).toBe('SUCCEEDED');
    expect(timedOut).toEqual([]);
    expect(record).toMatchObject({
      state: 'failed',
      result: { success: false, error: expect.stringContaining('marketplace') },
    });
    expect(deliveries).toHaveLength(1);
    expect(deliveries[0].json).toEqual(record?.result);
    expect(sim.control.orders()).toEqual([]);
  });

  it('a step that hits its Lambda timeout once (Sandbox.Timedout) is retried, and the task succeeds', async () => {
    // Prepare: CheckOrder's first invocation hangs past its timeout, whatever its budget says.
    hooks.CheckOrder = () => new Promise((resolve) => setTimeout(resolve, TIMEOUT_MS.CheckOrder + 1_000));
    // Act
    const { execution, record, deliveries } = await runTask('budget-sandbox-timeout');
    // Assess
    expect(timedOut).toEqual(['CheckOrder']);
    expect(execution.status).toBe('SUCCEEDED');
    expect(record).toMatchObject({ state: 'succeeded', result: { success: true } });
    expect(deliveries).toHaveLength(1);
    expect(sim.control.orders()).toHaveLength(1);
  });

  it('an unexpected exception (not a business outcome) is retried like the SQS worker retries it', async () => {
    // Prepare: a bug-like TypeError in FindServer's first invocation.
    hooks.FindServer = async () => {
      throw new TypeError('Cannot read properties of undefined');
    };
    // Act
    const { execution, record, deliveries } = await runTask('budget-unexpected');
    // Assess
    expect(execution.status).toBe('SUCCEEDED');
    expect(record).toMatchObject({ state: 'succeeded', result: { success: true } });
    expect(deliveries).toHaveLength(1);
  });
});
