import { MarketplaceUnavailableError } from '../../../../lambdas/domain/errors';
import { withInvocationBudget } from '../../../../lambdas/adapters/invocation-budget';
import * as observability from '../../../../lambdas/adapters/observability';

// The metric functions as writable properties, so the tests can spy on them (a transpiler's CommonJS
// exports may be read-only getters).
jest.mock('../../../../lambdas/adapters/observability', () => {
  const actual = jest.requireActual<typeof observability>('../../../../lambdas/adapters/observability');
  return { __esModule: true, ...actual, countMetric: actual.countMetric, publishMetrics: actual.publishMetrics };
});
import {
  leaseWorstCaseMs,
  createFleetWatchHandler,
  sweepLimit,
  FINISH_RESERVE_MS,
} from '../../../../lambdas/handlers/watch/fleet-watch';
import { anOrder } from '../../../fakes/builders';
import { FakeEventSender } from '../../../fakes/event-sender';
import { FakeLeaseStore } from '../../../fakes/lease-store';
import { FakeMarketplace } from '../../../fakes/marketplace';
import { FakeNotifier } from '../../../fakes/notifier';
import { seedLeases } from '../../../fakes/seed-leases';
import { FakeClaims } from '../../../fakes/claims';
import { FakeTasks } from '../../../fakes/tasks';
import { FakeWaitingTasks } from '../../../fakes/waiting-tasks';
import { FakeWorkflow } from '../../../fakes/workflow-starter';

const NOW = 1_700_000_000;
const SETTINGS = { LEASE_WARNING_SECONDS: 600, MARKETPLACE_TIMEOUT_MS: 10_000, MARKETPLACE_MIN_INTERVAL_MS: 1_000 };

const setup = () => {
  const leases = new FakeLeaseStore();
  const marketplace = new FakeMarketplace();
  const notifier = new FakeNotifier();
  const events = new FakeEventSender();
  const fn = createFleetWatchHandler(
    () => ({ leases, marketplace, notifier, events }),
    () => SETTINGS,
    () => NOW,
  );
  return { leases, marketplace, notifier, events, fn };
};

describe('Handler: fleet watch', () => {
  let stored: { name: string; value: number }[];
  /** EMF blobs published (the report is one). */
  let blobs: number;
  let counted: string[];
  let logs: { level: string; message: string; fields: unknown }[];

  beforeEach(() => {
    stored = [];
    counted = [];
    logs = [];
    blobs = 0;
    jest.spyOn(observability, 'publishMetrics').mockImplementation((values) => {
      blobs += 1;
      stored.push(...values.map(({ name, value }) => ({ name, value })));
    });
    jest.spyOn(observability, 'countMetric').mockImplementation((name) => {
      counted.push(name);
    });
    for (const level of ['info', 'warn', 'error'] as const) {
      jest.spyOn(observability.logger, level).mockImplementation((...args: unknown[]) => {
        logs.push({ level, message: String(args[0]), fields: args[1] });
      });
    }
  });
  afterEach(() => jest.restoreAllMocks());

  it('sweeps with the configured warning window and publishes the report as metrics, zeros included', async () => {
    const { fn, leases, marketplace } = setup();
    await seedLeases(leases, marketplace, { total: 20, due: 3, now: NOW });
    const report = await fn({});
    expect(report).toMatchObject({ due: 3, cancelled: 3, failedCancels: 0 });
    expect(Object.fromEntries(stored.map((m) => [m.name, m.value]))).toEqual({
      LeasesDue: 3,
      LeaseWarnings: 0,
      LeasesCancelled: 3,
      LeaseCancelFailures: 0,
      OrderStatusChanges: 0,
      LifecycleEvents: report.eventsSent,
      LifecycleEventFailures: 0,
      WatchTableReads: report.tableReads,
      WatchMarketplaceCalls: 4,
      WatchDeferred: 0,
      OrphanOrdersCancelled: 0,
      WaitingTasks: 0,
      WaitingTasksResumed: 0,
      WaitingTasksExpired: 0,
      WaitingSlotsRepaired: 0,
    });
    expect(blobs).toBe(1);
    expect(counted).toEqual([]);
  });

  it('publishes the waiting slots the sweep repaired as WaitingSlotsRepaired (issue 38 §1)', async () => {
    // Prepare: a queue whose slots drifted (the recount finds 3 things to repair), nothing waiting
    const { leases, marketplace, notifier, events } = setup();
    const waiting = Object.assign(new FakeWaitingTasks(), { recount: async () => 3 });
    const standing = {
      waiting,
      marketplace,
      claims: new FakeClaims(),
      tasks: new FakeTasks(),
      notifier,
      workflow: new FakeWorkflow(),
    };
    const fn = createFleetWatchHandler(
      () => ({ leases, marketplace, notifier, events, standing }),
      () => SETTINGS,
      () => NOW,
    );
    // Act
    const report = await fn({});
    // Assess
    expect(report.waitingSlotsRepaired).toBe(3);
    expect(stored).toContainEqual({ name: 'WaitingSlotsRepaired', value: 3 });
  });

  it('does not throw for failed cancels: counts them and logs order ids and reasons', async () => {
    const { fn, leases, marketplace } = setup();
    marketplace.orders = [anOrder(7)];
    await leases.track(
      { order_id: 7, task_id: 't7', callback_url: 'https://receiver.example/hook?token=secret' },
      { now: NOW - 100, status: 'running', lease: { expires_at: NOW - 1, hours: 1 } },
    );
    marketplace.cancelFailures.set(7, new MarketplaceUnavailableError('marketplace unavailable'));
    const report = await fn({});
    expect(report.failedCancels).toBe(1);
    expect(stored).toContainEqual({ name: 'LeaseCancelFailures', value: 1 });
    const warning = logs.find((l) => l.level === 'warn');
    expect(warning?.fields).toEqual({ cancelFailures: [{ order_id: 7, reason: 'marketplace unavailable' }] });
    expect(JSON.stringify(logs)).not.toContain('receiver.example');
  });

  it('throws an infrastructure failure after counting WatchErrors, publishing no report', async () => {
    const { fn, leases, marketplace } = setup();
    await leases.track({ order_id: 1, task_id: 't1' }, { now: NOW - 100, status: 'running' });
    marketplace.listOrders = async () => {
      throw new MarketplaceUnavailableError('down');
    };
    await expect(fn({})).rejects.toThrow('down');
    expect(counted).toEqual(['WatchErrors']);
    expect(stored).toEqual([]);
  });

  it('defers leases whose worst case no longer fits the invocation, instead of timing out', async () => {
    const { fn, leases, marketplace } = setup();
    await seedLeases(leases, marketplace, { total: 10, due: 5, now: NOW });
    // Less left than one lease's worst case: nothing is started, everything waits for the next sweep.
    const context = { getRemainingTimeInMillis: () => leaseWorstCaseMs(SETTINGS) + FINISH_RESERVE_MS - 1 };
    const report = await withInvocationBudget(context, () => fn({}, context));
    expect(report).toMatchObject({ due: 5, cancelled: 0, deferred: 5, failedCancels: 0 });
    expect(marketplace.cancelCalls).toEqual([]);
  });
});

describe('Function: sweepLimit', () => {
  it('fits the sweep in two thirds of the time at the paced rate, capped at 100', () => {
    expect(sweepLimit(300_000, 1_000)).toBe(100);
    expect(sweepLimit(150_000, 1_000)).toBe(50);
    expect(sweepLimit(1_000, 1_000)).toBe(1);
    expect(sweepLimit(Number.POSITIVE_INFINITY, 1_000)).toBe(100);
  });
});
