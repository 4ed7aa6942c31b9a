/**
 * The create-order workflow with real parts: the ASL synthesized from the CDK construct run by
 * LocalStepFunctions (aws-local-stepfunctions), the real task handlers wired to the HTTP
 * marketplace client against the simulator, DynamoDB adapters against dynalite, and the HTTP
 * notifier posting to real receivers. Only durations are shrunk.
 */
import { synthesizeWorkflowAsl } from '../../local/asl';
import { LocalStepFunctions, type ExecutionDescription } from '../../local/stepfunctions';
import { startSimulator, type MarketplaceSimulator, type SimServer } from '../../local/simulator/marketplace-simulator';
import { HttpMarketplaceClient } from '../../lambdas/marketplace/http-marketplace-client';
import { InMemoryPacingGate } from '../../lambdas/marketplace/in-memory-pacing-gate';
import { DynamoDbTaskRepository } from '../../lambdas/adapters/dynamodb/dynamodb-task-repository';
import { DynamoDbLeaseStore } from '../../lambdas/adapters/dynamodb/dynamodb-lease-store';
import { DynamoDbServerClaims } from '../../lambdas/adapters/dynamodb/dynamodb-server-claims';
import { DynamoDbSlidingWindow } from '../../lambdas/adapters/dynamodb/dynamodb-sliding-window';
import { HttpNotifier } from '../../lambdas/adapters/http-notifier';
import { createFindServerStepHandler } from '../../lambdas/handlers/workflow/find-server';
import { createReserveQuotaStepHandler } from '../../lambdas/handlers/workflow/reserve-quota';
import { createPlaceOrderStepHandler } from '../../lambdas/handlers/workflow/place-order';
import { createCheckOrderStepHandler } from '../../lambdas/handlers/workflow/check-order';
import { sshBannerProbe } from '../../lambdas/adapters/ssh-banner-probe';
import { createCancelOrderStepHandler } from '../../lambdas/handlers/workflow/cancel-order';
import { createReportResultStepHandler } from '../../lambdas/handlers/workflow/report-result';
import { createExecutionEndedHandler } from '../../lambdas/handlers/workflow/execution-ended';
import { WORKFLOW_TASKS } from '../../contract/routes';
import type { CreateOrderInput, TaskRecord } from '../../lambdas/domain/task';
import type { CreateOrderWorkflowInput, MarketplaceClient } from '../../lambdas/domain/ports';
import { startDynalite, type LocalDynamo } from '../helpers/dynalite';
import { startReceiver, TEST_CALLBACK_SECRET, type Receiver } from '../helpers/receivers';
import { workflowRequest } from '../../lambdas/domain/requests/accept-task';
import { placementWaits } from '../fakes/placement-intents';
import { DynamoDbPlacementIntents } from '../../lambdas/adapters/dynamodb/dynamodb-placement-intents';

export const NATIVE = 'NATIVE-Blockchain';
export const WEBHOOK_SECRET = 'workflow-test-secret';

/** A simulator server with a GPU name no seeded server has, so only the test's servers match. */
export const testServer = (
  id: number,
  patch: Partial<SimServer> & { spot?: number; usdSpot?: number; usdOnDemand?: number } = {},
): SimServer => {
  const { spot, usdSpot, usdOnDemand, ...rest } = patch;
  return {
    id,
    owner: 7,
    mrl: 48,
    rented: false,
    online: true,
    price: {
      on_demand: { [NATIVE]: 20, bitcoin: 0.0001 },
      spot: { [NATIVE]: spot ?? 8 },
      usd: { on_demand_native: usdOnDemand ?? 0.9, spot: usdSpot ?? 0.45 },
    },
    specs: { gpu: '2x ZETA Z9000', cpu: 'test cpu', ram: 64, disk: '1TB nvme' },
    gpu_array: ['ZETA Z9000', 'ZETA Z9000'],
    reliability: 0.99,
    rating: { avg: 4.9, cnt: 10 },
    allowed_coins: [NATIVE, 'bitcoin'],
    ...rest,
  };
};

/**
 * What Step Functions reports for a Lambda invocation that ended without an answer: the function
 * timed out, or its sandbox died mid-step (a crash). The step's Retry (States.ALL) covers it.
 */
export class LambdaSandboxTimedoutError extends Error {
  public constructor(state: string) {
    super(`${state}: Task timed out (the function ended mid-step)`);
    this.name = 'Sandbox.Timedout';
  }
}

export interface RunOptions {
  readonly request?: Partial<CreateOrderInput>;
  readonly timing?: Partial<CreateOrderWorkflowInput['timing']>;
}

export interface RunOutcome {
  readonly execution: ExecutionDescription;
  readonly record: TaskRecord | undefined;
}

export interface WorkflowHarness {
  readonly sim: MarketplaceSimulator;
  readonly dynamo: LocalDynamo;
  readonly sfn: LocalStepFunctions;
  readonly callback: Receiver;
  readonly slack: Receiver;
  readonly discord: Receiver;
  readonly tasks: DynamoDbTaskRepository;
  readonly quota: DynamoDbSlidingWindow;
  readonly leases: DynamoDbLeaseStore;
  /** Every Task state invocation so far, in order (state names; the crash-point tests count retries). */
  readonly invocations: string[];
  /** Hourly order cap the ReserveQuota handler uses (tests change it). */
  maxOrdersPerHour: number;
  /** Wraps the next create_order calls (fault injection on our side of the wire). */
  createOrderHook?: (
    send: () => Promise<{ order_id: number | undefined }>,
  ) => Promise<{ order_id: number | undefined }>;
  /** Wraps the next my_orders reads (PlaceOrder's reconciliation, CheckOrder's readiness). */
  listOrdersHook?: (
    send: () => ReturnType<MarketplaceClient['listOrders']>,
  ) => ReturnType<MarketplaceClient['listOrders']>;
  /** Wraps the next result callbacks (ReportResult's delivery). */
  callbackHook?: (send: () => Promise<boolean>) => Promise<boolean>;
  /**
   * Ends the invocation of `state` in progress the way a Lambda timeout or crash does: Step Functions
   * sees `Sandbox.Timedout`, and the returned promise never settles, so nothing after this point of
   * the step runs (call it from a hook, and return what it returns).
   */
  crashStep(state: string): Promise<never>;
  /** Creates the task record (as the ingress does) and runs one execution to its end. */
  run(taskId: string, options?: RunOptions): Promise<RunOutcome>;
  /** Back to the seeded simulator with the given test servers appended (listing order = array order). */
  resetServers(servers: readonly SimServer[]): void;
  close(): Promise<void>;
}

let taskCounter = 0;
/** A unique task id per run (executions are named by task id). */
export const nextTaskId = (label: string): string => `${label}-${process.pid}-${++taskCounter}`;

export interface HarnessOptions {
  /** Hard timeout of executions (seconds). @default the definition's 600 */
  readonly timeoutSeconds?: number;
}

export const startWorkflowHarness = async (options: HarnessOptions = {}): Promise<WorkflowHarness> => {
  const [{ asl, functionForState }, sim, dynamo, callback, slack, discord] = await Promise.all([
    synthesizeWorkflowAsl(),
    // The simulator enforces the same spacing the client keeps, as the real marketplace would.
    startSimulator({ port: 0, seed: 7, readyDelayMs: 300, rateLimit: true, minIntervalMs: 10 }),
    startDynalite(),
    startReceiver(),
    startReceiver(),
    startReceiver(),
  ]);
  const http = new HttpMarketplaceClient({
    baseUrl: sim.url,
    apiKey: async () => sim.apiKey,
    pacing: new InMemoryPacingGate(),
    minIntervalMs: 15,
    // Rate-limited answers widen the interval up to 10× the minimum, as production's 1 s → 10 s.
    maxIntervalMs: 150,
    // The spec-dialect simulator has no create_order limit; the 5 s production spacing would only slow these tests.
    createIntervalMs: 0,
    timeoutMs: 2_000,
    baseBackoffMs: 10,
    maxBackoffMs: 50,
  });
  const harness = { maxOrdersPerHour: 1_000 } as WorkflowHarness;
  const marketplace: MarketplaceClient = {
    listServers: () => http.listServers(),
    listWallets: () => http.listWallets(),
    createOrder: (request) =>
      harness.createOrderHook ? harness.createOrderHook(() => http.createOrder(request)) : http.createOrder(request),
    listOrders: (opts) =>
      harness.listOrdersHook ? harness.listOrdersHook(() => http.listOrders(opts)) : http.listOrders(opts),
    cancelOrder: (id) => http.cancelOrder(id),
    setSpotPrice: (id, price) => http.setSpotPrice(id, price),
    spotMarket: (id) => http.spotMarket(id),
  };
  const sshProbe = sshBannerProbe({ allowPrivate: true, timeoutMs: 1_000 });
  const tasks = new DynamoDbTaskRepository(dynamo.doc, dynamo.tableName);
  const claims = new DynamoDbServerClaims(dynamo.doc, dynamo.tableName);
  const intents = new DynamoDbPlacementIntents(dynamo.doc, dynamo.tableName);
  const leases = new DynamoDbLeaseStore(dynamo.doc, dynamo.tableName);
  const quota = new DynamoDbSlidingWindow(dynamo.doc, dynamo.tableName);
  const notifier = new HttpNotifier({
    signingSecrets: async () => [TEST_CALLBACK_SECRET],
    chat: async () => ({ slack: `${slack.url}/slack`, discord: `${discord.url}/discord` }),
    allowPrivate: true,
    callbackTimeoutMs: 2_000,
    chatTimeoutMs: 2_000,
    callbackAttempts: 2,
    callbackBackoffMs: 10,
  });
  const deliver = notifier.callback.bind(notifier);
  notifier.callback = (url, taskId, result) =>
    harness.callbackHook ? harness.callbackHook(() => deliver(url, taskId, result)) : deliver(url, taskId, result);

  const byEntry: Record<string, (input: unknown) => Promise<unknown>> = {
    [WORKFLOW_TASKS.FindServer]: createFindServerStepHandler(() => ({ marketplace, claims, tasks })),
    [WORKFLOW_TASKS.ReserveQuota]: createReserveQuotaStepHandler(() => ({
      quota,
      maxOrdersPerHour: harness.maxOrdersPerHour,
    })),
    [WORKFLOW_TASKS.PlaceOrder]: createPlaceOrderStepHandler(() => ({
      marketplace,
      tasks,
      claims,
      ...placementWaits(intents),
    })),
    // READINESS_PROBE=ssh as deployed, against the simulator's ssh endpoints on loopback.
    [WORKFLOW_TASKS.CheckOrder]: createCheckOrderStepHandler(() => ({ marketplace, sshProbe })),
    [WORKFLOW_TASKS.CancelOrder]: createCancelOrderStepHandler(() => ({ marketplace, tasks, intents })),
    [WORKFLOW_TASKS.ReportResult]: createReportResultStepHandler(() => ({ tasks, notifier, claims, leases })),
  };
  const invocations: string[] = [];
  const inProgress = new Map<string, (error: Error) => void>();
  const executionEnded = createExecutionEndedHandler(() => ({ marketplace, tasks, notifier, claims }));
  const sfn = new LocalStepFunctions({
    asl,
    handlers: Object.fromEntries(
      Object.entries(functionForState).map(([state, entry]) => [
        state,
        (input: unknown) => {
          invocations.push(state);
          return new Promise((resolve, reject) => {
            inProgress.set(state, reject);
            byEntry[entry](input).then(resolve, reject);
          });
        },
      ]),
    ),
    onExecutionEnded: (event) => executionEnded(event),
    waitTimeOverrides: { WaitForReady: 100 },
    retryIntervalOverrides: Object.fromEntries(Object.keys(functionForState).map((state) => [state, 20])),
    timeoutSeconds: options.timeoutSeconds,
  });

  return Object.assign(harness, {
    sim,
    dynamo,
    sfn,
    callback,
    slack,
    discord,
    tasks,
    quota,
    leases,
    invocations,
    crashStep(state: string): Promise<never> {
      inProgress.get(state)?.(new LambdaSandboxTimedoutError(state));
      return new Promise<never>(() => undefined);
    },
    resetServers(servers: readonly SimServer[]) {
      sim.control.reset();
      sim.control.setReadyDelay(300);
      for (const server of servers) sim.control.addServer(server);
    },
    async run(taskId: string, opts: RunOptions = {}): Promise<RunOutcome> {
      const now = Date.now();
      const request: CreateOrderInput = {
        gpu_type: 'z9000',
        image: 'nvidia/cuda:12.4.1-base-ubuntu22.04',
        currency: NATIVE,
        ports: { '22': 'tcp', '8888': 'http' },
        use_spot: true,
        callback_url: `${callback.url}/hook/${taskId}`,
        ...opts.request,
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
        timing: {
          poll_interval_seconds: 1,
          ready_timeout_seconds: 120,
          soft_deadline: Math.floor(now / 1000) + 300,
          ...opts.timing,
        },
      };
      const { executionArn } = sfn.startExecution(taskId, input);
      const execution = await sfn.waitForExecution(executionArn);
      return { execution, record: await tasks.get(taskId) };
    },
    async close() {
      await sfn.close();
      await Promise.all([sim.close(), dynamo.close(), callback.close(), slack.close(), discord.close()]);
    },
  });
};
