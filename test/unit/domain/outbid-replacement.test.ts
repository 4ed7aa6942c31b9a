/**
 * Outbid replacement (issue 23 item 1, lambdas/domain/recovery/outbid-replacement.ts): the replacement round's
 * request and start, and the settling of ended rounds (the new order takes over the lease, the lost
 * one is cancelled, order.replaced / order.recovery_failed once). Also the workflow's two hooks:
 * FindServer never picks the lost server, ReportResult leaves tracking and chat to the watch.
 */
import { findServer } from '../../../lambdas/domain/create-order/find-server';
import { sweepFleet } from '../../../lambdas/domain/leases/fleet-watch';
import { reportResult } from '../../../lambdas/domain/create-order/report-result';
import type { Lease, TrackedOrder } from '../../../lambdas/domain/leases/lease';
import {
  createReplacer,
  remainingLeaseHours,
  replacementRequest,
  replacementTaskId,
  type PendingReplacement,
  type PendingReplacements,
  type ReplacerDeps,
} from '../../../lambdas/domain/recovery/outbid-replacement';
import { spendSettler } from '../../../lambdas/domain/teams/spend-settlement';
import type { TaskHistoryEntry } from '../../../lambdas/domain/task';
import { aPlacedOrder, aServer, aState, aTaskRecord } from '../../fakes/builders';
import { FakeClaims } from '../../fakes/claims';
import { FakeEventSender } from '../../fakes/event-sender';
import { FakeLeaseStore } from '../../fakes/lease-store';
import { FakeMarketplace } from '../../fakes/marketplace';
import { FakeNotifier } from '../../fakes/notifier';
import { FakeTasks } from '../../fakes/tasks';
import { FakeWorkflow } from '../../fakes/workflow-starter';

const NOW = 1_700_000_000;
const PARENT = 'parent-task';
const LOST = 501;
const LOST_SERVER = 77;
const NEW = 502;
const REQUEST = {
  gpu_type: '4090',
  image: 'img',
  currency: 'c',
  ports: { '22': 'tcp' },
  use_spot: true,
  max_price: 0.6,
  on_outbid: 'replace',
  callback_url: 'https://cb.example/x',
  wait_seconds: 600,
  max_hours: 4,
  env_names: ['TOKEN'],
};

class FakePending implements PendingReplacements {
  public readonly entries = new Map<string, PendingReplacement>();
  public async add(entry: PendingReplacement): Promise<void> {
    this.entries.set(entry.task_id, entry);
  }
  public async list(): Promise<readonly PendingReplacement[]> {
    return [...this.entries.values()];
  }
  public async remove(taskId: string): Promise<boolean> {
    return this.entries.delete(taskId);
  }
}

class KeepingTasks extends FakeTasks {
  public readonly kept = new Map<string, Record<string, string>>();
  public readonly history: { taskId: string; entry: TaskHistoryEntry }[] = [];
  public async replacementEnv(taskId: string) {
    return this.kept.get(taskId);
  }
  public async appendHistory(taskId: string, entry: TaskHistoryEntry): Promise<void> {
    this.history.push({ taskId, entry });
  }
}

const lease = (patch: Partial<Lease> = {}): Lease => ({
  order_id: LOST,
  task_id: PARENT,
  callback_url: 'https://cb.example/x',
  spot: true,
  on_outbid: 'replace',
  max_price: 0.6,
  key: 'ci',
  expires_at: NOW + 2 * 3600,
  hours: 4,
  ...patch,
});

const setup = () => {
  const tasks = new KeepingTasks();
  tasks.seed(PARENT, {
    state: 'succeeded',
    request: REQUEST,
    origin: { source: 'webhook', responseUrl: 'https://hooks.slack/x', caller: { key: 'ci' } as never },
  });
  tasks.kept.set(PARENT, { TOKEN: 'secret' });
  const leases = new FakeLeaseStore();
  const marketplace = new FakeMarketplace({ interleave: false });
  marketplace.orders = [aPlacedOrder(LOST, LOST_SERVER, NOW - 3600, 'paused'), aPlacedOrder(NEW, 88, NOW, 'running')];
  const settled: { taskId: string; endedAt: number }[] = [];
  const spend = {
    settle: async (taskId: string, end: { ended_at: number }) => {
      settled.push({ taskId, endedAt: end.ended_at });
      return undefined;
    },
  };
  const deps = {
    tasks,
    pending: new FakePending(),
    workflow: new FakeWorkflow(),
    leases,
    marketplace,
    notifier: new FakeNotifier(),
    events: new FakeEventSender(),
    spend,
  } satisfies ReplacerDeps;
  const replacer = createReplacer(deps, {
    poll_interval_seconds: 5,
    ready_timeout_seconds: 120,
    soft_limit_seconds: 300,
  });
  return { deps, replacer, tasks, leases, marketplace, settled };
};

/** Tracks the lost order as ReportResult would, watched as paused. */
const trackLost = async (leases: FakeLeaseStore, order: TrackedOrder = lease()): Promise<void> => {
  const { expires_at: expiresAt, hours, ...watched } = order as Lease;
  await leases.track(watched, {
    now: NOW - 3600,
    status: 'paused',
    ...(expiresAt !== undefined ? { lease: { expires_at: expiresAt, hours } } : {}),
  });
};

const childId = replacementTaskId(PARENT, LOST);
const finishChild = (tasks: FakeTasks, result: Record<string, unknown>): void => {
  const record = tasks.records.get(childId) ?? aTaskRecord(childId);
  tasks.records.set(childId, { ...record, state: result.success ? 'succeeded' : 'failed', result: result as never });
};
const READY = {
  success: true,
  order_id: NEW,
  server_id: 88,
  status: 'running',
  ssh_connection: 'ssh -p 2222 root@host502',
  gpu: ['x'],
  price_usd: 0.45,
};

describe('the replacement request', () => {
  it('keeps the request but the callback, the wait and the lease, which becomes what is left', () => {
    const request = replacementRequest(REQUEST, lease(), NOW);
    expect(request).toEqual({
      gpu_type: '4090',
      image: 'img',
      currency: 'c',
      ports: { '22': 'tcp' },
      use_spot: true,
      max_price: 0.6,
      on_outbid: 'replace',
      env_names: ['TOKEN'],
      max_hours: 2,
    });
  });

  it('has no lease when the lost order had none', () => {
    expect(remainingLeaseHours({ order_id: LOST, task_id: PARENT }, NOW)).toBeUndefined();
    expect(replacementRequest(REQUEST, { order_id: LOST, task_id: PARENT }, NOW)).not.toHaveProperty('max_hours');
  });
});

describe('Replacer.replace', () => {
  it('starts a round of its own through the create-order workflow: same request and env, the lost server excluded, no caller URL', async () => {
    const { replacer, deps, tasks } = setup();
    const started = await replacer.replace(lease(), aPlacedOrder(LOST, LOST_SERVER, 0, 'paused'), NOW);
    expect(started).toEqual({ started: true });
    const record = tasks.records.get(childId);
    expect(record).toMatchObject({
      kind: 'create-order',
      state: 'queued',
      origin: { source: 'webhook', caller: { key: 'ci' } },
    });
    expect(record?.origin.responseUrl).toBeUndefined();
    expect(record?.request.callback_url).toBeUndefined();
    expect(tasks.sealed.get(childId)).toEqual({ orderEnv: { TOKEN: 'secret' }, keepForReplacement: true });
    expect(deps.workflow.started).toHaveLength(1);
    const { input, name } = deps.workflow.started[0]!;
    expect(name).toBe(childId);
    expect(input.replaces).toEqual({ task_id: PARENT, order_id: LOST, server_id: LOST_SERVER });
    expect(input.request).toMatchObject({ gpu_type: '4090', max_hours: 2 });
    expect(JSON.stringify(input)).not.toContain('secret');
    expect(JSON.stringify(input)).not.toContain('cb.example');
    expect([...deps.pending.entries.values()]).toEqual([
      { task_id: childId, parent_task_id: PARENT, from_order_id: LOST, from_server_id: LOST_SERVER, started_at: NOW },
    ]);
  });

  it.each([
    ['its lease has ended', lease({ expires_at: NOW - 1 }), 'the lease of order 501 has ended'],
    ['its lease was ended', lease({ ended: 'cancelled' }), 'the lease of order 501 has ended'],
  ])('starts nothing when %s', async (_what, order, reason) => {
    const { replacer, deps } = setup();
    expect(await replacer.replace(order, aPlacedOrder(LOST, LOST_SERVER, 0, 'paused'), NOW)).toEqual({
      started: false,
      reason,
    });
    expect(deps.workflow.started).toHaveLength(0);
  });

  it('starts nothing when the env is no longer kept', async () => {
    const { replacer, deps, tasks } = setup();
    tasks.kept.clear();
    const outcome = await replacer.replace(lease(), aPlacedOrder(LOST, LOST_SERVER, 0, 'paused'), NOW);
    expect(outcome).toEqual({ started: false, reason: `the container env of task ${PARENT} is no longer kept` });
    expect(deps.workflow.started).toHaveLength(0);
  });

  it("starts no round for a revoked key's order: the reason is `key ci revoked` (issue 29 §4)", async () => {
    const { deps } = setup();
    const checked: { name: string; now: number }[] = [];
    const replacer = createReplacer(
      {
        ...deps,
        keys: async (name, now) => {
          checked.push({ name, now });
          return `key ${name} revoked`;
        },
      },
      { poll_interval_seconds: 5, ready_timeout_seconds: 120, soft_limit_seconds: 300 },
    );
    const outcome = await replacer.replace(lease(), aPlacedOrder(LOST, LOST_SERVER, 0, 'paused'), NOW);
    expect(outcome).toEqual({ started: false, reason: 'key ci revoked' });
    expect(checked).toEqual([{ name: 'ci', now: NOW }]);
    expect(deps.workflow.started).toHaveLength(0);
    expect(deps.pending.entries.size).toBe(0);
    expect(deps.tasks.records.has(childId)).toBe(false);
  });

  it('a start that fails leaves nothing pending', async () => {
    const { replacer, deps } = setup();
    deps.workflow.fail = new Error('throttled');
    const outcome = await replacer.replace(lease(), aPlacedOrder(LOST, LOST_SERVER, 0, 'paused'), NOW);
    expect(outcome).toMatchObject({ started: false });
    expect(deps.pending.entries.size).toBe(0);
  });
});

describe('Replacer.settle', () => {
  const started = async () => {
    const s = setup();
    await trackLost(s.leases);
    await s.replacer.replace(lease(), aPlacedOrder(LOST, LOST_SERVER, 0, 'paused'), NOW);
    return s;
  };

  it('leaves a round that is still running alone', async () => {
    const { replacer, deps, marketplace } = await started();
    const report = await replacer.settle(NOW + 10);
    expect(report).toMatchObject({ pending: 1, replaced: 0, failed: 0 });
    expect(marketplace.cancelCalls).toEqual([]);
    expect(deps.events.sent).toEqual([]);
  });

  it('a ready round takes over: the lease moves, the lost order is cancelled and unwatched, order.replaced once', async () => {
    const { replacer, deps, tasks, leases, marketplace, settled } = await started();
    finishChild(tasks, READY);
    const report = await replacer.settle(NOW + 30);
    expect(report).toMatchObject({ pending: 1, replaced: 1, failed: 0, eventsSent: 1 });
    // The new order: watched under the replaced task, with its callback, mode, key and the lease as it stands;
    // its spending is the round's reservation (issue 24), the lost order's is settled as it is cancelled
    expect(await leases.get(NEW)).toEqual({ ...lease(), order_id: NEW, spend_task_id: childId });
    expect(settled).toEqual([{ taskId: PARENT, endedAt: NOW + 30 }]);
    expect(leases.watch.get(NEW)?.status).toBe('running');
    // The lost order: cancelled, its lease ended, no longer watched
    expect(marketplace.cancelled).toEqual([LOST]);
    expect((await leases.get(LOST)) as Lease).toMatchObject({ ended: 'cancelled' });
    expect(leases.watch.has(LOST)).toBe(false);
    expect(deps.events.sent.map((s) => [s.url, s.event])).toEqual([
      [
        'https://cb.example/x',
        {
          event: 'order.replaced',
          order_id: NEW,
          task_id: PARENT,
          from_order_id: LOST,
          to_order_id: NEW,
          ssh_connection: READY.ssh_connection,
          occurred_at: NOW + 30,
        },
      ],
    ]);
    expect(deps.notifier.chats).toEqual([`Order ${LOST} was replaced by order ${NEW}. ${READY.ssh_connection}`]);
    expect(tasks.history.map((h) => [h.taskId, h.entry.event, h.entry.order_id])).toEqual([
      [PARENT, 'order.replaced', NEW],
    ]);
    expect(tasks.updates.at(-1)).toMatchObject({ taskId: PARENT });
    // Settled: the next sweep does nothing more
    expect(await replacer.settle(NOW + 60)).toMatchObject({ pending: 0, replaced: 0 });
    expect(deps.events.sent).toHaveLength(1);
  });

  it('reports order.replaced once even when overlapping sweeps both settle the round', async () => {
    const { replacer, deps, tasks } = await started();
    finishChild(tasks, READY);
    await Promise.all([replacer.settle(NOW + 30), replacer.settle(NOW + 30)]);
    expect(deps.events.sent.filter((s) => s.event.event === 'order.replaced')).toHaveLength(1);
    expect(deps.notifier.chats).toHaveLength(1);
  });

  it('a round that placed nothing: order.recovery_failed once with its reason; the lost order is left as it was', async () => {
    const { replacer, deps, tasks, leases, marketplace, settled } = await started();
    finishChild(tasks, { success: false, error: 'No 4090 available under $0.6/hr' });
    const report = await replacer.settle(NOW + 30);
    expect(report).toMatchObject({ replaced: 0, failed: 1 });
    expect(deps.events.sent.map((s) => s.event)).toEqual([
      {
        event: 'order.recovery_failed',
        order_id: LOST,
        task_id: PARENT,
        reason: 'no replacement was placed: No 4090 available under $0.6/hr',
        occurred_at: NOW + 30,
      },
    ]);
    expect(marketplace.cancelCalls).toEqual([]);
    expect(leases.watch.has(LOST)).toBe(true);
    expect(settled).toEqual([]);
    expect(await replacer.settle(NOW + 60)).toMatchObject({ pending: 0, failed: 0 });
    expect(deps.events.sent).toHaveLength(1);
  });

  it('a failed cancel of the lost order keeps the round for the next sweep, which reports once', async () => {
    const { replacer, deps, tasks, marketplace } = await started();
    finishChild(tasks, READY);
    marketplace.cancelFailures.set(LOST, new Error('marketplace down'));
    const first = await replacer.settle(NOW + 30);
    expect(first).toMatchObject({ replaced: 0, cancelFailures: [{ order_id: LOST, reason: 'marketplace down' }] });
    expect(deps.events.sent).toHaveLength(0);
    marketplace.cancelFailures.clear();
    expect(await replacer.settle(NOW + 60)).toMatchObject({ replaced: 1 });
    expect(marketplace.cancelled).toEqual([LOST]);
    expect(deps.events.sent).toHaveLength(1);
  });
});

describe('the sweep', () => {
  it("settles ended rounds every sweep, also when it watches nothing else (the lost order's record may be gone)", async () => {
    const { replacer, deps, tasks } = setup();
    await replacer.replace(lease(), aPlacedOrder(LOST, LOST_SERVER, 0, 'paused'), NOW);
    finishChild(tasks, { success: false, error: 'No 4090 available' });
    const report = await sweepFleet(
      {
        leases: deps.leases,
        marketplace: deps.marketplace,
        notifier: deps.notifier,
        events: deps.events,
        recovery: { marketplace: deps.marketplace, replacer },
      },
      { now: NOW + 30 },
    );
    expect(report).toMatchObject({ replacementsPending: 1, replacementsFailed: 1, replaced: 0 });
    expect(deps.events.sent.map((s) => s.event.event)).toEqual(['order.recovery_failed']);
  });
});

describe('spending of a replacement (issue 24)', () => {
  it("an ended replacement order settles the round's reservation, not the replaced task's", async () => {
    const calls: string[] = [];
    const settler = spendSettler({
      spend: {
        settle: async (taskId) => {
          calls.push(taskId);
          return undefined;
        },
      },
      marketplace: new FakeMarketplace(),
    });
    await settler.order({ task_id: PARENT, spend_task_id: childId }, { ended_at: NOW });
    await settler.order({ task_id: PARENT }, { ended_at: NOW });
    expect(calls).toEqual([childId, PARENT]);
  });
});

describe('the workflow for a replacement round', () => {
  it("FindServer never picks the lost order's server", async () => {
    const market = new FakeMarketplace({ interleave: false });
    market.servers = [aServer(LOST_SERVER), aServer(88)];
    const tasks = new FakeTasks();
    const state = aState({ task_id: childId, replaces: { task_id: PARENT, order_id: LOST, server_id: LOST_SERVER } });
    const search = await findServer(state, { marketplace: market, claims: new FakeClaims(), tasks }, 1_000);
    expect(search.server.id).toBe(88);
    expect(search.excluded).toEqual([LOST_SERVER]);
  });

  it('ReportResult leaves tracking the order and the chat to the fleet watch', async () => {
    const tasks = new FakeTasks();
    tasks.seed(childId);
    const leases = new FakeLeaseStore();
    const notifier = new FakeNotifier();
    const state = aState({
      task_id: childId,
      replaces: { task_id: PARENT, order_id: LOST, server_id: LOST_SERVER },
      search: { server: { id: 88, gpu_array: ['x'], price_usd: 0.45 }, attempt: 1, excluded: [LOST_SERVER] },
      placement: { retry: false, order_id: NEW, server_id: 88, placed_at: NOW * 1000 },
      check: {
        ready: true,
        timedOut: false,
        order: { order_id: NEW, status: 'running', ssh_connection: 'ssh x' },
        ready_at: NOW * 1000,
      },
    });
    const out = await reportResult(state, { tasks, notifier, claims: new FakeClaims(), leases }, NOW * 1000);
    expect(out.success).toBe(true);
    expect(await leases.get(NEW)).toBeUndefined();
    expect(notifier.chats).toEqual([]);
    expect(tasks.records.get(childId)?.result).toMatchObject({ order_id: NEW });
  });
});
