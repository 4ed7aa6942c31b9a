import { findServerOrWait, ENDED_WHILE_WAITING } from '../../../lambdas/domain/create-order/find-server';
import type { WaitingTask } from '../../../lambdas/domain/ports';
import { CreateOrderLeaseBodySchema, parseBody } from '../../../lambdas/http/requests';
import {
  queuePosition,
  resumedExecutionName,
  serveWaitingTasks,
  waitingEntry,
  WAIT_SECONDS_ERROR,
} from '../../../lambdas/domain/recovery/standing-orders';
import { toTaskView } from '../../../lambdas/domain/requests/task-view';
import { aServer, aState, aTaskRecord } from '../../fakes/builders';
import { FakeClaims } from '../../fakes/claims';
import { FakeMarketplace } from '../../fakes/marketplace';
import { FakeNotifier } from '../../fakes/notifier';
import { FakeTasks } from '../../fakes/tasks';
import { FakeWaitingTasks } from '../../fakes/waiting-tasks';
import { FakeWorkflow } from '../../fakes/workflow-starter';

const NOW_MS = 1_700_000_000_000;
const NOW_S = NOW_MS / 1000;

/** A standing order's workflow state: accepted at `acceptedAt`, waiting `waitSeconds`. */
const standing = (taskId: string, acceptedAt = NOW_MS, waitSeconds = 600, gpu = '4090') => {
  const base = aState();
  return aState({
    task_id: taskId,
    request: { ...base.request, gpu_type: gpu, wait_seconds: waitSeconds },
    timing: {
      ...base.timing,
      soft_deadline: Math.floor(acceptedAt / 1000) + 300,
      waiting_until: Math.floor(acceptedAt / 1000) + waitSeconds,
      accepted_at: acceptedAt,
    },
  });
};
const entry = (taskId: string, acceptedAt = NOW_MS, waitSeconds = 600, gpu = '4090'): WaitingTask =>
  waitingEntry(standing(taskId, acceptedAt, waitSeconds, gpu), 1);

const watchDeps = () => {
  const tasks = new FakeTasks();
  const deps = {
    waiting: new FakeWaitingTasks(),
    marketplace: new FakeMarketplace(),
    claims: new FakeClaims(),
    tasks,
    notifier: new FakeNotifier(),
    workflow: new FakeWorkflow(),
  };
  let listings = 0;
  const listServers = deps.marketplace.listServers.bind(deps.marketplace);
  deps.marketplace.listServers = async () => {
    listings += 1;
    return listServers();
  };
  const queue = async (...entries: WaitingTask[]) => {
    for (const e of entries) {
      await deps.waiting.add(e);
      tasks.seed(e.task_id, {
        state: 'waiting',
        request: {
          gpu_type: e.request.gpu_type,
          image: 'img',
          currency: e.request.currency,
          ports: {},
          use_spot: true,
          callback_url: `http://cb.example/${e.task_id}`,
        },
      });
    }
  };
  return { deps, queue, listings: () => listings };
};

describe('wait_seconds on create-order', () => {
  it.each([
    [0, undefined],
    [1, 1],
    [86_400, 86_400],
  ])('accepts %p', (value, expected) => {
    const parsed = parseBody(CreateOrderLeaseBodySchema, { gpu_type: 'RTX 4090', wait_seconds: value });
    expect(parsed).toMatchObject({ ok: true });
    if (parsed.ok) expect(parsed.value.wait_seconds).toBe(value === 0 ? 0 : expected);
  });
  it.each([-1, 86_401, 1.5, '60', true])('refuses %p with a 400 text naming the field', (value) => {
    expect(parseBody(CreateOrderLeaseBodySchema, { gpu_type: 'RTX 4090', wait_seconds: value })).toEqual({
      ok: false,
      error: WAIT_SECONDS_ERROR,
    });
  });
});

describe('Function: findServerOrWait (standing orders)', () => {
  const setup = () => ({
    marketplace: new FakeMarketplace(),
    claims: new FakeClaims(),
    tasks: new FakeTasks(),
    waiting: new FakeWaitingTasks(),
  });

  it('queues a standing order that finds no server and marks the task waiting', async () => {
    // Prepare
    const deps = setup();
    deps.tasks.seed('a');
    deps.marketplace.servers = [aServer(1, { rented: true })];
    // Act
    const result = await findServerOrWait(standing('a'), deps, NOW_MS);
    // Assess
    expect(result).toEqual({ waiting: true, waiting_until: NOW_S + 600 });
    expect([...deps.waiting.entries.values()]).toEqual([entry('a')]);
    expect(await deps.tasks.get('a')).toMatchObject({ state: 'waiting', waiting_until: NOW_S + 600 });
  });

  it('fails with the no-match text when the task may not wait (no wait_seconds, or its wait ended)', async () => {
    const deps = setup();
    await expect(
      findServerOrWait(aState({ timing: { ...aState().timing, soft_deadline: NOW_S + 300 } }), deps, NOW_MS),
    ).rejects.toMatchObject({ name: 'NoServerAvailableError', message: 'No 4090 available' });
    const ended = standing('a', NOW_MS - 601_000);
    await expect(
      findServerOrWait({ ...ended, timing: { ...ended.timing, soft_deadline: NOW_S + 300 } }, deps, NOW_MS),
    ).rejects.toMatchObject({ name: 'NoServerAvailableError' });
    expect(deps.waiting.entries.size).toBe(0);
  });

  it('queues a new standing order behind an older one for the same GPU type even when a server is free', async () => {
    // Prepare
    const deps = setup();
    deps.marketplace.servers = [aServer(1)];
    await deps.waiting.add(entry('older', NOW_MS - 5_000));
    // Act
    const result = await findServerOrWait(standing('newer'), deps, NOW_MS);
    // Assess
    expect(result).toMatchObject({ waiting: true });
    expect(deps.claims.holders.size).toBe(0);
    // Another GPU type's queue does not hold it back
    expect(
      await findServerOrWait(
        standing('other', NOW_MS, 600, 'A100'),
        {
          ...deps,
          marketplace: Object.assign(new FakeMarketplace(), { servers: [aServer(2, { gpu_array: ['NVIDIA A100'] })] }),
        },
        NOW_MS,
      ),
    ).toMatchObject({ server: { id: 2 } });
  });

  it('refuses at once a standing order whose host filters leave out every listed server of its GPU at its price, naming them, and gives its place back (issue 38 §2)', async () => {
    // Prepare: admitted (pending entry); two servers of its GPU are listed (one rented), neither has 1,000,000 ratings
    const deps = setup();
    deps.tasks.seed('a');
    const state = standing('a');
    const phantom = { ...state, request: { ...state.request, max_price: 1, min_rating_count: 1_000_000 } };
    await deps.waiting.add(waitingEntry(phantom, 0));
    deps.marketplace.servers = [aServer(1), aServer(2, { rented: true })];
    // Act / Assess
    await expect(findServerOrWait(phantom, deps, NOW_MS)).rejects.toThrow(
      'No 4090 available under $1/hr with rating from at least 1000000 ratings (2 servers left out by rating)',
    );
    expect(deps.waiting.entries.size).toBe(0);
  });

  it('refuses such a standing order at once also when older ones wait for its GPU type (issue 38 §2)', async () => {
    const deps = setup();
    deps.tasks.seed('a');
    await deps.waiting.add(entry('older', NOW_MS - 10_000));
    const state = standing('a');
    const phantom = { ...state, request: { ...state.request, min_rating_count: 1_000_000 } };
    deps.marketplace.servers = [aServer(1)];
    await expect(findServerOrWait(phantom, deps, NOW_MS)).rejects.toThrow(/left out by rating/);
    expect([...deps.waiting.entries.keys()]).toEqual(['older']);
  });

  it('waits when no server of its GPU is listed at its price (no listing to judge its filters by)', async () => {
    const deps = setup();
    deps.tasks.seed('a');
    const state = standing('a');
    const phantom = { ...state, request: { ...state.request, max_price: 1, min_rating_count: 1_000_000 } };
    deps.marketplace.servers = [
      aServer(1, { price: { ...aServer(1).price, usd_per_hour: { on_demand: {}, spot: 2 } } }),
    ];
    expect(await findServerOrWait(phantom, deps, NOW_MS)).toMatchObject({ waiting: true });
  });

  it("gives its place back when a standing order's first search fails (issue 38 §1)", async () => {
    const deps = setup();
    deps.tasks.seed('a');
    await deps.waiting.add(waitingEntry(standing('a'), 0));
    deps.marketplace.listServers = async () => {
      throw new Error('listing unavailable');
    };
    await expect(findServerOrWait(standing('a'), deps, NOW_MS)).rejects.toThrow('listing unavailable');
    expect(deps.waiting.entries.size).toBe(0);
  });

  it('a resumed task takes the server the watch claimed for it first, and stops when it was cancelled meanwhile', async () => {
    const deps = setup();
    deps.tasks.seed('a', { state: 'waiting' });
    deps.marketplace.servers = [aServer(1), aServer(2)];
    await deps.claims.claim(2, 'a');
    expect(
      await findServerOrWait({ ...standing('a'), resume: { server_id: 2, round: 1 } }, deps, NOW_MS),
    ).toMatchObject({ server: { id: 2 } });
    // Cancelled: final before the resumed execution ran
    deps.tasks.seed('b', { state: 'failed' });
    await deps.claims.claim(1, 'b');
    await expect(
      findServerOrWait({ ...standing('b'), resume: { server_id: 1, round: 1 } }, deps, NOW_MS),
    ).rejects.toThrow(ENDED_WHILE_WAITING);
    expect(await deps.claims.claim(1, 'someone-else')).toBe(true);
  });
});

describe('Function: serveWaitingTasks (the fleet watch)', () => {
  it('reads the listing once for 100 waiting tasks and nothing when none waits', async () => {
    // Prepare
    const { deps, queue, listings } = watchDeps();
    await serveWaitingTasks(deps, { nowMs: NOW_MS, softLimitSeconds: 300 });
    expect(listings()).toBe(0);
    await queue(
      ...Array.from({ length: 100 }, (_, i) => entry(`t${String(i).padStart(3, '0')}`, NOW_MS - 100_000 + i)),
    );
    deps.marketplace.servers = [aServer(1), aServer(2)];
    // Act
    const report = await serveWaitingTasks(deps, { nowMs: NOW_MS, softLimitSeconds: 300 });
    // Assess: one read, the two oldest served, in order, each on its own server
    expect(listings()).toBe(1);
    expect(report).toEqual({
      waiting: 100,
      resumed: 2,
      expired: 0,
      keyStopped: 0,
      listingReads: 1,
      slotsRepaired: 0,
    });
    expect(deps.workflow.started.map((s) => [s.taskId, s.name, s.input.resume])).toEqual([
      ['t000', resumedExecutionName('t000', 1), { server_id: 1, round: 1 }],
      ['t001', resumedExecutionName('t001', 1), { server_id: 2, round: 1 }],
    ]);
    expect(deps.waiting.entries.size).toBe(98);
  });

  it('never serves a waiting task on a host the relay avoids (issue 31 §2)', async () => {
    const { deps, queue } = watchDeps();
    await queue(entry('a', NOW_MS - 1_000));
    deps.marketplace.servers = [aServer(7), aServer(8)];
    const hosts = { avoidances: async () => ({ relay: new Set([7]), byKey: new Map<string, Set<number>>() }) };
    await serveWaitingTasks({ ...deps, hosts }, { nowMs: NOW_MS, softLimitSeconds: 300 });
    expect(deps.workflow.started.map((s) => s.input.resume?.server_id)).toEqual([8]);
  });

  it('serves first come, first served per GPU type: the older task gets the one server', async () => {
    const { deps, queue } = watchDeps();
    await queue(entry('younger', NOW_MS - 1_000), entry('older', NOW_MS - 2_000));
    deps.marketplace.servers = [aServer(7)];
    await serveWaitingTasks(deps, { nowMs: NOW_MS, softLimitSeconds: 300 });
    expect(deps.workflow.started.map((s) => s.taskId)).toEqual(['older']);
    const resumed = deps.workflow.started[0]?.input;
    expect(resumed?.timing).toMatchObject({
      soft_deadline: NOW_S + 300,
      waiting_until: entry('older').waiting_until - 2,
      accepted_at: NOW_MS - 2_000,
    });
    expect(queuePosition(await deps.waiting.list(), 'younger')).toBe(1);
  });

  it.each([
    ['after the server was claimed, before the execution started', false],
    ['after the execution started, before the queue entry was removed', true],
  ])(
    'during a sweep that resumes a standing order (crash point, AWS), %s: the next sweep resumes it once, the other keeps its place',
    async (_point, startedFirst) => {
      // Prepare: two standing orders for one GPU type, one server; the first sweep's function dies
      // at the point (timed out or crashed: nothing after it runs, the schedule runs the next sweep)
      const { deps, queue } = watchDeps();
      await queue(entry('older', NOW_MS - 2_000), entry('younger', NOW_MS - 1_000));
      deps.marketplace.servers = [aServer(7)];
      let reached!: () => void;
      const crashed = new Promise<void>((resolve) => (reached = resolve));
      const start = deps.workflow.start.bind(deps.workflow);
      deps.workflow.start = async (...args) => {
        deps.workflow.start = start;
        if (startedFirst) await start(...args);
        reached();
        return new Promise<never>(() => undefined);
      };
      void serveWaitingTasks(deps, { nowMs: NOW_MS, softLimitSeconds: 300 });
      await crashed;
      expect(deps.waiting.entries.has('older')).toBe(true);
      // Act: the next scheduled sweep
      const report = await serveWaitingTasks(deps, { nowMs: NOW_MS + 60_000, softLimitSeconds: 300 });
      // Assess: one execution under the resumed name, on the server it was given; the queue moved on
      expect(report).toMatchObject({ resumed: 1 });
      expect(deps.workflow.started.map((s) => [s.taskId, s.name, s.input.resume])).toEqual([
        ['older', resumedExecutionName('older', 1), { server_id: 7, round: 1 }],
      ]);
      expect(deps.claims.holders.get(7)).toBe('older');
      expect(deps.waiting.entries.has('older')).toBe(false);
      expect(queuePosition(await deps.waiting.list(), 'younger')).toBe(1);
    },
  );

  it("fails a revoked key's waiting tasks with `key <name> revoked`, once, and serves the others (issue 29 §4)", async () => {
    const { deps, queue } = watchDeps();
    const asKey = (e: WaitingTask, key: string): WaitingTask => ({ ...e, key_name: key });
    await queue(asKey(entry('temp-1', NOW_MS - 3_000), 'temp'), asKey(entry('ci-1', NOW_MS - 2_000), 'ci'));
    await queue(asKey(entry('old-1', NOW_MS - 1_000), 'old'), entry('default-1', NOW_MS - 500, 600, 'A100'));
    deps.marketplace.servers = [aServer(7), aServer(8)];
    const checked: string[] = [];
    const keys = async (name: string) => {
      checked.push(name);
      return name === 'temp' ? 'key temp revoked' : name === 'old' ? 'key old expired' : undefined;
    };
    const report = await serveWaitingTasks({ ...deps, keys }, { nowMs: NOW_MS, softLimitSeconds: 300 });
    await serveWaitingTasks({ ...deps, keys }, { nowMs: NOW_MS + 1_000, softLimitSeconds: 300 });
    expect(report).toMatchObject({ keyStopped: 2, resumed: 1 });
    expect(deps.notifier.callbacks).toEqual([
      { url: 'http://cb.example/temp-1', taskId: 'temp-1', result: { success: false, error: 'key temp revoked' } },
      { url: 'http://cb.example/old-1', taskId: 'old-1', result: { success: false, error: 'key old expired' } },
    ]);
    // The revoked key's task is never placed: the one 4090 server goes to ci's task behind it.
    expect(deps.workflow.started.map((s) => s.taskId)).toEqual(['ci-1']);
    expect(await deps.waiting.get('temp-1')).toBeUndefined();
    // One check per key name per sweep, none for the default key.
    expect(checked.slice(0, 3).sort()).toEqual(['ci', 'old', 'temp']);
  });

  it('does not expire a pending entry (its first search still running) before that execution must have ended', async () => {
    const { deps, queue } = watchDeps();
    await queue({ ...entry('fresh', NOW_MS - 2_000, 1), round: 0, pending: true });
    deps.marketplace.servers = [aServer(7)];
    // Its 1 s wait is over, but its own first execution may be placing an order right now: left alone, not served.
    const first = await serveWaitingTasks(deps, { nowMs: NOW_MS, softLimitSeconds: 300 });
    expect(first).toMatchObject({ expired: 0, resumed: 0 });
    expect(deps.notifier.callbacks).toEqual([]);
    // Past its soft limit the execution has ended: the place is given back (the task failed or succeeded already).
    await serveWaitingTasks(deps, { nowMs: NOW_MS + 300_000, softLimitSeconds: 300 });
    expect(await deps.waiting.get('fresh')).toBeUndefined();
  });

  it("gives back the place of a pending entry whose first execution failed, within that execution's limits (issue 38 §1)", async () => {
    // Prepare: admitted with a 24 h wait; its first FindServer threw (nothing converted the entry)
    const { deps, queue } = watchDeps();
    await queue({ ...entry('stuck', NOW_MS, 86_400), round: 0, pending: true });
    deps.tasks.seed('stuck', { state: 'failed' });
    // Act: once the first execution's soft and hard limits are over (2 × 300 s after acceptance)
    await serveWaitingTasks(deps, { nowMs: NOW_MS + 599_000, softLimitSeconds: 300 });
    expect(await deps.waiting.get('stuck')).toBeDefined();
    await serveWaitingTasks(deps, { nowMs: NOW_MS + 600_000, softLimitSeconds: 300 });
    // Assess: the place is free; the failed task gets no second result
    expect(await deps.waiting.get('stuck')).toBeUndefined();
    expect(deps.notifier.callbacks).toEqual([]);
  });

  it('recounts the slots from the queue every sweep, also when nothing waits, and reports what it repaired (issue 38 §1)', async () => {
    const { deps, queue } = watchDeps();
    const recounts: number[] = [];
    const waiting = Object.assign(deps.waiting, {
      recount: async (listed: readonly WaitingTask[]) => {
        recounts.push(listed.length);
        return 2;
      },
    });
    expect(await serveWaitingTasks({ ...deps, waiting }, { nowMs: NOW_MS, softLimitSeconds: 300 })).toMatchObject({
      waiting: 0,
      slotsRepaired: 2,
    });
    await queue(entry('a'));
    await serveWaitingTasks({ ...deps, waiting }, { nowMs: NOW_MS, softLimitSeconds: 300 });
    expect(recounts).toEqual([0, 1]);
  });

  it('matches with the host filters and prefer the entry carries: phantoms get no server and no execution, and keep their place (issue 38 §2)', async () => {
    // Prepare: 3 older standing orders no listed host can serve (1,000,000 ratings), one later caller, 6 free servers
    const { deps, queue } = watchDeps();
    const phantom = (id: string, at: number): WaitingTask => {
      const state = standing(id, at);
      return waitingEntry({ ...state, request: { ...state.request, min_rating_count: 1_000_000 } }, 1);
    };
    await queue(phantom('p1', NOW_MS - 4_000), phantom('p2', NOW_MS - 3_000), phantom('p3', NOW_MS - 2_000));
    const later = standing('later', NOW_MS - 1_000);
    await queue(waitingEntry({ ...later, request: { ...later.request, prefer: 'cheapest', exclude_servers: [1] } }, 1));
    deps.marketplace.servers = [1, 2, 3, 4, 5, 6].map((id) =>
      aServer(id, { price: { ...aServer(id).price, usd_per_hour: { on_demand: {}, spot: 1 - id / 10 } } }),
    );
    // Act
    const report = await serveWaitingTasks(deps, { nowMs: NOW_MS, softLimitSeconds: 300 });
    // Assess: one execution, the later caller's, on the cheapest server it may use; the phantoms still wait in place
    expect(report).toMatchObject({ resumed: 1 });
    expect(deps.workflow.started.map((s) => [s.taskId, s.input.resume?.server_id])).toEqual([['later', 6]]);
    expect([...deps.claims.holders.entries()]).toEqual([[6, 'later']]);
    expect((await deps.waiting.list()).map((w) => [w.task_id, w.round])).toEqual([
      ['p1', 1],
      ['p2', 1],
      ['p3', 1],
    ]);
    expect(queuePosition(await deps.waiting.list(), 'p1')).toBe(1);
  });

  it('fails a task whose wait ended with the no-match text, once', async () => {
    const { deps, queue } = watchDeps();
    await queue({ ...entry('late', NOW_MS - 61_000, 60), request: { ...entry('late').request, max_price: 0.5 } });
    const report = await serveWaitingTasks(deps, { nowMs: NOW_MS, softLimitSeconds: 300 });
    await serveWaitingTasks(deps, { nowMs: NOW_MS + 1_000, softLimitSeconds: 300 });
    expect(report).toMatchObject({ expired: 1, listingReads: 0 });
    expect(deps.notifier.callbacks).toEqual([
      {
        url: 'http://cb.example/late',
        taskId: 'late',
        result: { success: false, error: 'No 4090 available under $0.5/hr' },
      },
    ]);
    expect(deps.workflow.started).toEqual([]);
  });

  it('does not try a task the cap holds (no listing read, no resume), and resumes it alone for its GPU type once the hold ends', async () => {
    // Prepare: the oldest task is held (the cap refused it) for 60 s; a younger one waits behind it
    const { deps, queue, listings } = watchDeps();
    const held = {
      ...entry('held', NOW_MS - 3_000),
      round: 2,
      held_until: NOW_S + 60,
      held_by: 'Hourly order limit reached (1 per hour)',
    };
    await queue(held);
    deps.marketplace.servers = [aServer(1), aServer(2)];
    // Act / Assess: while held, nothing is read or started
    expect(await serveWaitingTasks(deps, { nowMs: NOW_MS, softLimitSeconds: 300 })).toEqual({
      waiting: 1,
      resumed: 0,
      expired: 0,
      keyStopped: 0,
      listingReads: 0,
      slotsRepaired: 0,
    });
    expect(listings()).toBe(0);
    // A younger task is still tried while the older one is held (another key's cap or budget may allow it)
    await queue(entry('younger', NOW_MS - 1_000));
    expect(await serveWaitingTasks(deps, { nowMs: NOW_MS, softLimitSeconds: 300 })).toMatchObject({
      resumed: 1,
      listingReads: 1,
    });
    expect(deps.workflow.started.map((s) => s.taskId)).toEqual(['younger']);
    // The hold ends: the held task goes first, and alone (the one order the cap allows is its)
    await queue(entry('later', NOW_MS - 500));
    await deps.claims.release(1, 'younger');
    expect(await serveWaitingTasks(deps, { nowMs: NOW_MS + 61_000, softLimitSeconds: 300 })).toMatchObject({
      resumed: 1,
    });
    expect(deps.workflow.started.map((s) => [s.taskId, s.name])).toEqual([
      ['younger', resumedExecutionName('younger', 1)],
      ['held', resumedExecutionName('held', 2)],
    ]);
    expect(queuePosition(await deps.waiting.list(), 'later')).toBe(1);
  });

  it("fails a task whose wait ends while the cap holds it with the cap's text, once", async () => {
    const { deps, queue } = watchDeps();
    const text = 'Hourly order limit reached (1 per hour)';
    await queue({ ...entry('held', NOW_MS - 61_000, 60), held_until: NOW_S + 3_000, held_by: text });
    expect(await serveWaitingTasks(deps, { nowMs: NOW_MS, softLimitSeconds: 300 })).toMatchObject({
      expired: 1,
      listingReads: 0,
    });
    await serveWaitingTasks(deps, { nowMs: NOW_MS + 1_000, softLimitSeconds: 300 });
    expect(deps.notifier.callbacks).toEqual([
      { url: 'http://cb.example/held', taskId: 'held', result: { success: false, error: text } },
    ]);
  });

  it("a repeated sweep after a lost removal starts nothing new (the execution name is the round's)", async () => {
    const { deps, queue } = watchDeps();
    await queue(entry('a'));
    deps.marketplace.servers = [aServer(1)];
    deps.waiting.remove = async () => false; // the removal is lost
    await serveWaitingTasks(deps, { nowMs: NOW_MS, softLimitSeconds: 300 });
    await serveWaitingTasks(deps, { nowMs: NOW_MS + 1_000, softLimitSeconds: 300 });
    expect(deps.workflow.calls).toEqual(['a', 'a']);
    expect(deps.workflow.started).toHaveLength(1);
  });
});

describe('Task view of a waiting task', () => {
  it('shows waiting_until and the position; not once the task runs', () => {
    expect(toTaskView(aTaskRecord('a', { state: 'waiting', waiting_until: 5 }), 2)).toMatchObject({
      state: 'waiting',
      waiting_until: 5,
      position: 2,
    });
    const running = toTaskView(aTaskRecord('a', { state: 'running', waiting_until: 5 }), 2);
    expect(running.waiting_until).toBeUndefined();
    expect(running.position).toBeUndefined();
  });
});
