import { sweepFleet, type FleetWatchDeps } from '../../../lambdas/domain/leases/fleet-watch';
import { MarketplaceUnavailableError } from '../../../lambdas/domain/errors';
import { ORPHAN_GRACE_SECONDS, INTENT_WATCH_SECONDS } from '../../../lambdas/domain/leases/orphan-orders';
import { aPlacedOrder } from '../../fakes/builders';
import { FakeEventSender } from '../../fakes/event-sender';
import { FakeLeaseStore } from '../../fakes/lease-store';
import { FakeMarketplace } from '../../fakes/marketplace';
import { FakeNotifier } from '../../fakes/notifier';
import { FakePlacementIntents } from '../../fakes/placement-intents';
import { FakeTasks } from '../../fakes/tasks';

const NOW = 1_700_000_000;
const VISIBLE = 60;
const CB = 'https://receiver.example/hook';
/** An intent whose task stopped looking a moment ago. */
const INTENT_AT = (NOW - VISIBLE - ORPHAN_GRACE_SECONDS - 1) * 1000;
const SERVER = 7;

const setup = () => {
  const leases = new FakeLeaseStore();
  const marketplace = new FakeMarketplace();
  const notifier = new FakeNotifier();
  const events = new FakeEventSender();
  const intents = new FakePlacementIntents();
  const tasks = new FakeTasks();
  tasks.seed('task-1', { state: 'failed', request: { gpu_type: 'RTX 4090', callback_url: CB } });
  const deps = { leases, marketplace, notifier, events, intents, tasks } satisfies FleetWatchDeps;
  return { ...deps, deps };
};
const sweep = (deps: FleetWatchDeps, now = NOW) => sweepFleet(deps, { now, visibleTimeoutSeconds: VISIBLE });

describe('Orders nobody kept (sweepFleet with placement intents)', () => {
  it('cancels an order placed for a task that did not keep it, once, and reports it once', async () => {
    // Prepare: the task's create_order landed but its answer was lost, and the order showed too late.
    const { deps, marketplace, intents, notifier, events } = setup();
    await intents.open({ task_id: 'task-1', server_id: SERVER, at: INTENT_AT });
    marketplace.orders = [aPlacedOrder(501, SERVER, Math.floor(INTENT_AT / 1000) + 2, 'running')];
    // Act
    const first = await sweep(deps);
    const second = await sweep(deps, NOW + 60);
    // Assess
    expect(marketplace.cancelCalls).toEqual([501]);
    expect(first).toMatchObject({ orphansCancelled: 1, eventsSent: 1, marketplaceCalls: 2 });
    expect(second).toMatchObject({ orphansCancelled: 0, marketplaceCalls: 0 });
    expect(notifier.chats).toEqual(['Order 501 cancelled: placed for task task-1, which did not keep it']);
    expect(events.sent).toEqual([
      {
        url: CB,
        id: 'orphan_cancelled:501',
        event: { event: 'order.orphan_cancelled', order_id: 501, task_id: 'task-1', occurred_at: NOW },
      },
    ]);
    expect(await intents.list()).toEqual([]);
  });

  it('leaves the order to its task while the task may still be looking for it', async () => {
    const { deps, marketplace, intents } = setup();
    const at = (NOW - VISIBLE) * 1000;
    await intents.open({ task_id: 'task-1', server_id: SERVER, at });
    marketplace.orders = [aPlacedOrder(502, SERVER, Math.floor(at / 1000), 'running')];
    const report = await sweep(deps);
    expect(report.marketplaceCalls).toBe(0);
    expect(marketplace.cancelCalls).toEqual([]);
    expect(await intents.list()).toHaveLength(1);
  });

  it('never cancels an order a task kept, and closes its intent', async () => {
    const { deps, marketplace, intents, notifier } = setup();
    await intents.open({ task_id: 'task-1', server_id: SERVER, at: INTENT_AT });
    await intents.claimOrder(503, 'task:task-1', NOW);
    marketplace.orders = [aPlacedOrder(503, SERVER, Math.floor(INTENT_AT / 1000), 'running')];
    await sweep(deps);
    expect(marketplace.cancelCalls).toEqual([]);
    expect(notifier.chats).toEqual([]);
    expect(await intents.list()).toEqual([]);
  });

  it('never touches orders the relay did not place: other servers, older orders, watched orders', async () => {
    const { deps, marketplace, intents, leases } = setup();
    await intents.open({ task_id: 'task-1', server_id: SERVER, at: INTENT_AT });
    await leases.track({ order_id: 506, task_id: 'task-9' }, { now: NOW - 100, status: 'running' });
    marketplace.orders = [
      aPlacedOrder(504, SERVER + 1, Math.floor(INTENT_AT / 1000), 'running'), // another server
      aPlacedOrder(505, SERVER, Math.floor(INTENT_AT / 1000) - 3600, 'running'), // rented an hour before the intent
      aPlacedOrder(506, SERVER, Math.floor(INTENT_AT / 1000), 'running'), // followed by the watch: a task kept it
    ];
    const report = await sweep(deps);
    expect(marketplace.cancelCalls).toEqual([]);
    expect(report.orphansCancelled).toBe(0);
    // Nothing showed for it: the intent stays watched until INTENT_WATCH_SECONDS have passed.
    expect(await intents.list()).toHaveLength(1);
    await sweep(deps, Math.ceil(INTENT_AT / 1000) + INTENT_WATCH_SECONDS);
    expect(await intents.list()).toEqual([]);
  });

  it('cancels once when two sweeps overlap', async () => {
    const { deps, marketplace, intents, notifier, events } = setup();
    await intents.open({ task_id: 'task-1', server_id: SERVER, at: INTENT_AT });
    marketplace.orders = [aPlacedOrder(507, SERVER, Math.floor(INTENT_AT / 1000), 'running')];
    await Promise.all([sweep(deps), sweep(deps, NOW + 1)]);
    expect(notifier.chats).toHaveLength(1);
    expect(events.sent).toHaveLength(1);
  });

  it('tries a failed cancel again on the next sweep and reports it once', async () => {
    const { deps, marketplace, intents, notifier } = setup();
    await intents.open({ task_id: 'task-1', server_id: SERVER, at: INTENT_AT });
    marketplace.orders = [aPlacedOrder(508, SERVER, Math.floor(INTENT_AT / 1000), 'running')];
    marketplace.cancelFailures.set(508, new MarketplaceUnavailableError('down'));
    const first = await sweep(deps);
    expect(first).toMatchObject({ orphansCancelled: 0, failedCancels: 1 });
    expect(await intents.list()).toHaveLength(1);
    marketplace.cancelFailures.clear();
    const second = await sweep(deps, NOW + 60);
    expect(second).toMatchObject({ orphansCancelled: 1 });
    expect(notifier.chats).toEqual(['Order 508 cancelled: placed for task task-1, which did not keep it']);
  });
});
