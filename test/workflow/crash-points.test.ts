/**
 * Issue 39 §3, the AWS column of docs/reliability.md's crash-point table: the points where
 * `npm start` is killed in test/e2e/crash-points.test.ts are, in AWS, a Lambda crash or timeout in
 * the middle of a step. Here the step's invocation ends exactly there (`Sandbox.Timedout`, what Step
 * Functions reports for a function that timed out or died; nothing after that point of the step
 * runs), in the state machine synthesized from the stack, and the safety net the table names for it
 * is what carries the task on: each time the step's own Retry, which runs the step again.
 * For each point: the execution succeeds, the crashed step ran again, one result (one webhook-id, one
 * body), one order, and the order's lease. The points covered outside the state machine (a cancel
 * job, a key revoke, the fleet watch's sweep) are tested where they live; the table names those tests.
 */
import { hasLease } from '../../lambdas/domain/leases/lease';
import type { Order } from '../../lambdas/domain/marketplace-types';
import { waitUntil } from '../helpers/until';
import { nextTaskId, startWorkflowHarness, testServer, type WorkflowHarness } from './harness';

interface CrashPoint {
  /** The point, as docs/reliability.md's table names it. */
  readonly point: string;
  /** The step whose Lambda dies there, and whose Retry carries the task on. */
  readonly state: 'PlaceOrder' | 'CheckOrder' | 'ReportResult';
  /** Arms the crash on `h` (each hook disarms itself once it fired). */
  readonly arm: (h: WorkflowHarness) => void;
}

const running = (orders: readonly Order[]) => orders.some((o) => o.status === 'running');

const CRASH_POINTS: readonly CrashPoint[] = [
  {
    point: 'after create_order was sent, before its answer',
    state: 'PlaceOrder',
    arm: (h) => {
      h.createOrderHook = async (send) => {
        h.createOrderHook = undefined;
        const created = h.sim.control.counters().ordersCreated;
        void send().catch(() => undefined);
        await waitUntil(() => h.sim.control.counters().ordersCreated > created, 'create_order processed', 10_000);
        return h.crashStep('PlaceOrder');
      };
    },
  },
  {
    point: "after create_order's answer, before the relay records it",
    state: 'PlaceOrder',
    arm: (h) => {
      h.createOrderHook = async (send) => {
        h.createOrderHook = undefined;
        await send();
        return h.crashStep('PlaceOrder');
      };
    },
  },
  {
    point: 'an order placed and not yet running',
    state: 'CheckOrder',
    arm: (h) => {
      h.sim.control.setReadyDelay(1_500);
      h.listOrdersHook = async (send) => {
        const orders = await send();
        if (h.invocations.at(-1) !== 'CheckOrder' || running(orders)) return orders;
        h.listOrdersHook = undefined;
        return h.crashStep('CheckOrder');
      };
    },
  },
  {
    point: 'after the order is running, before the lease starts',
    state: 'CheckOrder',
    arm: (h) => {
      h.listOrdersHook = async (send) => {
        const orders = await send();
        if (h.invocations.at(-1) !== 'CheckOrder' || !running(orders)) return orders;
        h.listOrdersHook = undefined;
        return h.crashStep('CheckOrder');
      };
    },
  },
  {
    point: 'during the result callback',
    state: 'ReportResult',
    arm: (h) => {
      h.callbackHook = async (send) => {
        h.callbackHook = undefined;
        await send();
        return h.crashStep('ReportResult');
      };
    },
  },
];

describe('Crash points in AWS: a Lambda crash or timeout mid-step, covered by the step Retry', () => {
  let h: WorkflowHarness;
  let serverId = 39_000;

  beforeAll(async () => {
    h = await startWorkflowHarness();
  });
  afterAll(async () => {
    await h.close();
  });
  afterEach(() => {
    h.createOrderHook = undefined;
    h.listOrdersHook = undefined;
    h.callbackHook = undefined;
  });

  it.each(CRASH_POINTS)('$point: $state Retry, one result, one order, its lease', async ({ state, arm }) => {
    // Prepare
    serverId += 1;
    h.resetServers([testServer(serverId)]);
    arm(h);
    const from = h.invocations.length;
    const taskId = nextTaskId('crash');

    // Act
    const { execution, record } = await h.run(taskId, { request: { use_spot: false, max_hours: 1 } });

    // Assert: the crash happened and the step ran again
    const ran = h.invocations.slice(from);
    expect(h.createOrderHook ?? h.listOrdersHook ?? h.callbackHook).toBeUndefined();
    expect(ran.filter((s) => s === state).length).toBeGreaterThanOrEqual(2);
    // one result
    expect(execution.status).toBe('SUCCEEDED');
    expect(record).toMatchObject({ state: 'succeeded', order_id: expect.any(Number) });
    const deliveries = h.callback.requests.filter((r) => r.path.endsWith(`/${taskId}`));
    expect(deliveries.length).toBeGreaterThanOrEqual(1);
    expect(new Set(deliveries.map((d) => d.headers['webhook-id'])).size).toBe(1);
    expect(new Set(deliveries.map((d) => d.body)).size).toBe(1);
    expect(deliveries[0]!.json).toMatchObject({ success: true, order_id: record!.order_id });
    // no second order
    expect(h.sim.control.orders().map((o) => o.order_id)).toEqual([record!.order_id]);
    // and no order without its lease
    const lease = await h.leases.get(record!.order_id!);
    expect(hasLease(lease)).toBe(true);
    expect(lease).toMatchObject({
      task_id: taskId,
      expires_at: (record!.result as { lease_expires_at?: number }).lease_expires_at,
    });
  });

  it('an order placed and not yet running, CheckOrder dying on every attempt: past its Retry the Catch cancels the order, one failure result', async () => {
    // Prepare: every CheckOrder invocation dies once it read my_orders
    serverId += 1;
    h.resetServers([testServer(serverId)]);
    h.sim.control.setReadyDelay(600_000);
    h.listOrdersHook = async (send) => {
      const orders = await send();
      return h.invocations.at(-1) === 'CheckOrder' ? h.crashStep('CheckOrder') : orders;
    };
    const from = h.invocations.length;
    const taskId = nextTaskId('crash-always');

    // Act
    const { execution, record } = await h.run(taskId, { request: { use_spot: false, max_hours: 1 } });

    // Assert: 1 + 3 retries, then CancelOrder and the failure report
    const ran = h.invocations.slice(from);
    expect(ran.filter((s) => s === 'CheckOrder')).toHaveLength(4);
    expect(ran.slice(-2)).toEqual(['CancelOrder', 'ReportResult']);
    expect(execution.status).toBe('SUCCEEDED');
    expect(record).toMatchObject({ state: 'failed' });
    const deliveries = h.callback.requests.filter((r) => r.path.endsWith(`/${taskId}`));
    expect(deliveries).toHaveLength(1);
    expect(deliveries[0]!.json).toMatchObject({ success: false, error: expect.any(String) });
    // the one order it placed is not left running
    expect(h.sim.control.orders()).toHaveLength(1);
    expect(h.sim.control.orders().filter((o) => !o.completed)).toEqual([]);
  });
});
