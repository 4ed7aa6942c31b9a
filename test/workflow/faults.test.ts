/**
 * Fault injection on the create-order workflow: the ASL synthesized from the CDK stack, run by
 * LocalStepFunctions with the real task handlers, the marketplace simulator over HTTP, dynalite and
 * real HTTP receivers (test/workflow/harness.ts; retry intervals 20 ms, marketplace timeout 2 s,
 * callback timeout 2 s with 2 attempts).
 *
 * For every fault the relay's promises are checked:
 * - the task ends with exactly one result: a final task record, and one callback delivery (one
 *   webhook-id, one body, equal to the recorded result; retries of that delivery only when the
 *   receiver failed);
 * - no order is placed twice: at most one order per task, and a failed task leaves no order running;
 * - the execution ends (nothing hangs).
 */
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { Fault } from '../../local/simulator/marketplace-simulator';
import type { TaskRecord } from '../../lambdas/domain/task';
import { nextTaskId, startWorkflowHarness, testServer, type RunOptions, type WorkflowHarness } from './harness';

/** Beyond the harness' 2 s marketplace and callback timeouts. */
const BEYOND_TIMEOUT_MS = 2_500;
/** Attempts per callback in the harness' notifier. */
const CALLBACK_ATTEMPTS = 2;

type Expected = 'succeeded' | 'failed' | 'either';

interface MarketplaceFaultCase {
  readonly name: string;
  readonly faults: readonly Fault[];
  readonly expected: Expected;
}

/** Marketplace faults; `times` bounds a fault, a large `times` makes it last for the whole task. */
const MARKETPLACE_FAULTS: readonly MarketplaceFaultCase[] = [
  { name: 'listing down twice', faults: [{ endpoint: 'marketplace', kind: 'down', times: 2 }], expected: 'succeeded' },
  {
    name: 'create_order down once',
    faults: [{ endpoint: 'create_order', kind: 'down', times: 1 }],
    expected: 'succeeded',
  },
  { name: 'marketplace down for good', faults: [{ endpoint: '*', kind: 'down', times: 10_000 }], expected: 'failed' },
  {
    name: 'create_order slower than the client timeout',
    faults: [{ endpoint: 'create_order', kind: 'slow', delayMs: BEYOND_TIMEOUT_MS, times: 1 }],
    expected: 'succeeded',
  },
  {
    name: 'listing slower than the client timeout',
    faults: [{ endpoint: 'marketplace', kind: 'slow', delayMs: BEYOND_TIMEOUT_MS, times: 1 }],
    expected: 'succeeded',
  },
  {
    name: 'code 1 on create_order',
    faults: [{ endpoint: 'create_order', kind: 'code', code: 1, times: 1 }],
    expected: 'succeeded',
  },
  {
    name: 'code 1 on every call for good',
    faults: [{ endpoint: '*', kind: 'code', code: 1, times: 10_000 }],
    expected: 'failed',
  },
  { name: 'a storm of code 5', faults: [{ endpoint: '*', kind: 'code', code: 5, times: 12 }], expected: 'succeeded' },
  { name: 'code 5 for good', faults: [{ endpoint: '*', kind: 'code', code: 5, times: 10_000 }], expected: 'failed' },
  {
    name: 'malformed create_order answer',
    faults: [{ endpoint: 'create_order', kind: 'malformed', times: 1 }],
    expected: 'succeeded',
  },
  {
    name: 'malformed my_orders answers',
    faults: [{ endpoint: 'my_orders', kind: 'malformed', times: 2 }],
    expected: 'succeeded',
  },
  {
    name: 'malformed listing for good',
    faults: [{ endpoint: 'marketplace', kind: 'malformed', times: 10_000 }],
    expected: 'failed',
  },
  {
    name: 'create_order times out after sending',
    faults: [{ endpoint: 'create_order', kind: 'timeoutAfterSend', times: 1 }],
    expected: 'succeeded',
  },
  {
    name: 'create_order times out after sending, then my_orders fails',
    faults: [
      { endpoint: 'create_order', kind: 'timeoutAfterSend', times: 1 },
      { endpoint: 'my_orders', kind: 'down', times: 2 },
    ],
    expected: 'succeeded',
  },
  {
    name: 'create_order times out after sending beyond the client timeout',
    faults: [{ endpoint: 'create_order', kind: 'timeoutAfterSend', delayMs: BEYOND_TIMEOUT_MS, times: 1 }],
    expected: 'succeeded',
  },
  {
    // The answer is lost and my_orders stays down through every PlaceOrder attempt (4 attempts × 3
    // reads): the task may fail, but must not leave the order it did place running.
    name: 'create_order answer lost and my_orders down through every retry',
    faults: [
      { endpoint: 'create_order', kind: 'timeoutAfterSend', times: 1 },
      { endpoint: 'my_orders', kind: 'down', times: 12 },
    ],
    expected: 'either',
  },
  {
    name: 'cancel_order down when the order is never ready',
    faults: [{ endpoint: 'cancel_order', kind: 'down', times: 2 }],
    expected: 'failed',
  },
];

describe('Faults: create-order workflow', () => {
  let h: WorkflowHarness;
  let serverId = 20_000;

  beforeAll(async () => {
    h = await startWorkflowHarness();
  });
  afterAll(async () => {
    await h.close();
  });
  afterEach(() => {
    h.callback.setBehaviour({});
    h.slack.setBehaviour({});
    h.discord.setBehaviour({});
  });

  const deliveriesOf = (taskId: string) => h.callback.requests.filter((r) => r.path.endsWith(`/${taskId}`));

  /** Runs one task on a fresh simulator with one matching server and returns what it left behind. */
  const runTask = async (
    label: string,
    faults: readonly Fault[],
    options: RunOptions & { neverReady?: boolean } = {},
  ) => {
    serverId += 1;
    h.resetServers([testServer(serverId)]);
    if (options.neverReady) h.sim.control.setReadyDelay(600_000);
    for (const fault of faults) h.sim.control.inject(fault);
    const taskId = nextTaskId(label);
    const outcome = await h.run(taskId, options);
    h.sim.control.clearFaults();
    return { taskId, ...outcome };
  };

  /** The three promises for one finished task. */
  const expectPromisesKept = (
    taskId: string,
    record: TaskRecord | undefined,
    opts: { receiverFailed?: boolean } = {},
  ) => {
    // One result: a final record ...
    expect(record?.state === 'succeeded' || record?.state === 'failed').toBe(true);
    // ... and one delivery of it: one id, one body, the recorded result.
    const deliveries = deliveriesOf(taskId);
    if (opts.receiverFailed) {
      expect(deliveries.length).toBeGreaterThanOrEqual(1);
      expect(deliveries.length).toBeLessThanOrEqual(CALLBACK_ATTEMPTS);
    } else {
      expect(deliveries).toHaveLength(1);
    }
    expect(new Set(deliveries.map((d) => d.headers['webhook-id'])).size).toBe(1);
    expect(new Set(deliveries.map((d) => d.body)).size).toBe(1);
    expect(deliveries[0].json).toEqual(record?.result);
    // No order twice; a failed task leaves nothing running (and paid for).
    const orders = h.sim.control.orders();
    expect(orders.length).toBeLessThanOrEqual(1);
    if (record?.state === 'succeeded') {
      expect(orders).toHaveLength(1);
      expect(orders[0].order_id).toBe(record.order_id);
      expect(deliveries[0].json).toMatchObject({ success: true, order_id: record.order_id });
    } else {
      expect(orders.filter((o) => !o.completed)).toEqual([]);
      expect(deliveries[0].json).toMatchObject({ success: false, error: expect.any(String) });
    }
  };

  describe('marketplace', () => {
    it.each(MARKETPLACE_FAULTS)(
      '$name: the task ends $expected with one result and at most one order',
      async ({ name, faults, expected }) => {
        // Act
        const { taskId, execution, record } = await runTask(
          name.replace(/\W+/g, '-'),
          faults,
          name.startsWith('cancel_order') ? { neverReady: true, timing: { ready_timeout_seconds: 1 } } : {},
        );
        // Assess
        expect(execution.status).toBe('SUCCEEDED');
        if (expected !== 'either') expect(record?.state).toBe(expected);
        expectPromisesKept(taskId, record);
        // Every fault was really hit: a bounded one used up (not left unconsumed), a lasting one reached.
        const calls = h.sim.control.counters().calls;
        const total = Object.values(calls).reduce((a, b) => a + b, 0);
        for (const fault of faults) {
          const reached = fault.endpoint === '*' ? total : (calls[fault.endpoint] ?? 0);
          expect(reached).toBeGreaterThanOrEqual(Math.min(fault.times ?? 1, 2));
          if ((fault.times ?? 1) <= 2) expect(reached).toBeGreaterThanOrEqual(fault.times ?? 1);
        }
      },
    );
  });

  describe('callback receiver', () => {
    it('retries a failing callback with the same delivery id and still records the result', async () => {
      h.callback.setBehaviour({ status: 503 });
      const { taskId, execution, record } = await runTask('cb-503', []);
      expect(execution.status).toBe('SUCCEEDED');
      expect(record?.state).toBe('succeeded');
      expect(deliveriesOf(taskId)).toHaveLength(CALLBACK_ATTEMPTS);
      expectPromisesKept(taskId, record, { receiverFailed: true });
    });

    it('gives up on a callback receiver slower than the timeout without hanging the task', async () => {
      h.callback.setBehaviour({ delayMs: BEYOND_TIMEOUT_MS });
      const { taskId, execution, record } = await runTask('cb-slow', []);
      expect(execution.status).toBe('SUCCEEDED');
      expect(record?.state).toBe('succeeded');
      expectPromisesKept(taskId, record, { receiverFailed: true });
    });

    it('records the result when the callback host refuses connections', async () => {
      // A port that was just closed: nothing listens there.
      const closed = createServer();
      await new Promise<void>((resolve) => closed.listen(0, '127.0.0.1', () => resolve()));
      const { port } = closed.address() as AddressInfo;
      await new Promise<void>((resolve) => closed.close(() => resolve()));
      const { execution, record } = await runTask('cb-down', [], {
        request: { callback_url: `http://127.0.0.1:${port}/hook` },
      });
      expect(execution.status).toBe('SUCCEEDED');
      expect(record).toMatchObject({ state: 'succeeded', result: { success: true } });
      expect(h.sim.control.orders()).toHaveLength(1);
    });

    it('delivers a failure result once when the receiver fails and the marketplace is down', async () => {
      h.callback.setBehaviour({ status: 500 });
      const { taskId, record } = await runTask('cb-500-mp-down', [{ endpoint: '*', kind: 'down', times: 10_000 }]);
      expect(record?.state).toBe('failed');
      expectPromisesKept(taskId, record, { receiverFailed: true });
    });
  });

  describe('chat receivers', () => {
    it.each([
      ['down (HTTP 500)', { status: 500 }],
      ['slower than the chat timeout', { delayMs: BEYOND_TIMEOUT_MS }],
    ])('Slack and Discord %s: the task still succeeds with one callback', async (_label, behaviour) => {
      h.slack.setBehaviour(behaviour);
      h.discord.setBehaviour(behaviour);
      const slackBefore = h.slack.requests.length;
      const { taskId, execution, record } = await runTask('chat-fault', []);
      expect(execution.status).toBe('SUCCEEDED');
      expect(record?.state).toBe('succeeded');
      expectPromisesKept(taskId, record);
      // The announcement was attempted (and failed); it did not block or repeat the result.
      expect(h.slack.requests.length).toBeGreaterThan(slackBefore);
    });
  });
});
