import {
  PRICE_NOT_MET,
  isFinalAttempt,
  isRetryable,
  priceAlertOrderTaskId,
  retryDelaySeconds,
  runCancel,
  runJob,
  runPriceAlert,
  runStatus,
  summarizeOrders,
} from '../../../lambdas/domain/requests/jobs';
import {
  MarketplaceInvalidInputError,
  MarketplaceRejectedError,
  MarketplaceUnavailableError,
  SoftTimeoutError,
} from '../../../lambdas/domain/errors';
import { anOrder, aServer } from '../../fakes/builders';
import { jobFakes } from '../../fakes/deps';
import { FakeWaitingTasks } from '../../fakes/waiting-tasks';

const NOW = Date.parse('2025-03-01T12:00:00.000Z');
const ALERT_TASK = '11111111-2222-4333-8444-555555555555';

describe('Function: runCancel', () => {
  it('cancels the order, tells the chat and returns the cancel result', async () => {
    // Prepare
    const { deps, marketplace, notifier } = jobFakes();
    // Act
    const result = await runCancel({ order_id: 4242 }, deps, NOW);
    // Assess
    expect(result).toEqual({ success: true, order_id: 4242, status: 'cancelled' });
    expect(marketplace.cancelled).toEqual([4242]);
    expect(notifier.chats).toHaveLength(1);
    expect(notifier.chats[0]).toContain('4242');
    expect(notifier.chats[0]?.toLowerCase()).toContain('cancelled');
  });

  it('throws the marketplace error without telling the chat', async () => {
    // Prepare
    const { deps, marketplace, notifier } = jobFakes();
    marketplace.failures.push(new MarketplaceUnavailableError('status 503'));
    // Act + Assess
    await expect(runCancel({ order_id: 1 }, deps, NOW)).rejects.toThrow('status 503');
    expect(notifier.chats).toEqual([]);
  });

  it("names an order my_orders does not list as not this account's (issue 28), not retried", async () => {
    // Prepare
    const { deps, marketplace, notifier } = jobFakes();
    marketplace.orders = [anOrder(7, { status: 'running' })];
    marketplace.failures.push(new MarketplaceInvalidInputError('marketplace rejected the input of cancel_order'));
    // Act
    const outcome = runCancel({ order_id: 99999 }, deps, NOW);
    // Assess
    await expect(outcome).rejects.toThrow(
      new MarketplaceInvalidInputError("order 99999 is not one of this account's orders"),
    );
    expect(notifier.chats).toEqual([]);
  });

  it('keeps the marketplace refusal for a listed order that is still active, and succeeds for one already ended', async () => {
    const { deps, marketplace } = jobFakes();
    marketplace.orders = [anOrder(7, { status: 'running' }), anOrder(8, { status: 'expired' })];
    marketplace.failures.push(new MarketplaceInvalidInputError('marketplace rejected the input of cancel_order'));
    await expect(runCancel({ order_id: 7 }, deps, NOW)).rejects.toThrow(
      'marketplace rejected the input of cancel_order',
    );
    marketplace.failures.push(new MarketplaceInvalidInputError('marketplace rejected the input of cancel_order'));
    expect(await runCancel({ order_id: 8 }, deps, NOW)).toEqual({ success: true, order_id: 8, status: 'cancelled' });
  });
});

describe('Function: runCancel records when the marketplace took the cancel', () => {
  it('ends the time held at the clock after cancel_order answered, not at the job start', async () => {
    // Prepare: cancel_order answers 7 s after the job began (a paced slot, a slow answer)
    const { deps, marketplace } = jobFakes();
    let clockMs = NOW;
    const cancelOrder = marketplace.cancelOrder.bind(marketplace);
    marketplace.cancelOrder = async (orderId: number) => {
      clockMs += 7_000;
      return cancelOrder(orderId);
    };
    const moments: number[] = [];
    const leases = { cancelled: async (_orderId: number, at: number) => void moments.push(at) };
    // Act
    await runCancel({ order_id: 4242 }, { ...deps, leases, clock: () => clockMs }, NOW);
    await runCancel({ order_id: 4243 }, { ...deps, leases }, NOW);
    // Assess: with a clock, the answer's moment; without one, the job's start
    expect(moments).toEqual([(NOW + 7_000) / 1000, NOW / 1000]);
  });
});

describe('Function: runStatus', () => {
  it('counts running and creating orders and lists ssh lines of active orders only', async () => {
    // Prepare
    const { deps, marketplace } = jobFakes();
    marketplace.orders = [
      anOrder(1, { status: 'running', connection: { ssh: 'ssh -p 2222 user@host1' } }),
      anOrder(2, { status: 'creating_order', connection: {} }),
      anOrder(3, { status: 'running', connection: { ssh: 'ssh -p 2223 user@host2' } }),
      anOrder(4, { status: 'paused', connection: {} }),
    ];
    // Act
    const result = await runStatus({}, deps);
    // Assess
    expect(result).toEqual({
      total_orders: 4,
      active: 2,
      creating: 1,
      orders: [
        { order_id: 1, status: 'running', ssh: 'ssh -p 2222 user@host1' },
        { order_id: 2, status: 'creating_order', ssh: null },
        { order_id: 3, status: 'running', ssh: 'ssh -p 2223 user@host2' },
        { order_id: 4, status: 'paused', ssh: null },
      ],
    });
    expect(marketplace.listOrdersOptions).toEqual([{ returnCompleted: false }]);
  });

  it('lists lease_expires_at for leased orders only (not for watched orders without a lease, nor ended leases)', async () => {
    // Prepare: 1 leased, 2 watched without a lease, 3 with an ended lease, 4 unknown to the relay
    const { deps, marketplace, leases } = jobFakes();
    marketplace.orders = [1, 2, 3, 4].map((id) => anOrder(id, { status: 'running' }));
    await leases.track(
      { order_id: 1, task_id: 't1', spot: true },
      { now: 1_000, status: 'running', lease: { expires_at: 4_600, hours: 1 } },
    );
    await leases.track({ order_id: 2, task_id: 't2', spot: true }, { now: 1_000, status: 'running' });
    await leases.track(
      { order_id: 3, task_id: 't3', spot: true },
      { now: 1_000, status: 'running', lease: { expires_at: 2_000, hours: 0.5 } },
    );
    await leases.endLease(3, 'cancelled', 2_001);
    // Act
    const result = await runStatus({}, deps);
    // Assess
    expect(result.orders.map((o) => o.lease_expires_at)).toEqual([4_600, undefined, undefined, undefined]);
    expect(result.orders.filter((o) => 'lease_expires_at' in o).map((o) => o.order_id)).toEqual([1]);
  });

  it('summarizes an account without orders as zeros', () => {
    expect(summarizeOrders([])).toEqual({ total_orders: 0, active: 0, creating: 0, orders: [] });
  });
});

describe('Function: runPriceAlert', () => {
  const input = { gpu_type: '4090', target_price: 0.5, image: 'my/image:1', callback_url: 'https://cb.example/hook' };
  /** A spot price under the target ($0.4/h). */
  const underTarget = {
    price: {
      on_demand: { 'NATIVE-Blockchain': 10 },
      spot: { 'NATIVE-Blockchain': 5 },
      usd_per_hour: { on_demand: { 'NATIVE-Blockchain': 0.8 }, spot: 0.4 },
    },
  };

  it('passes wait_seconds on to the create-order it queues, as a standing order (issue 23)', async () => {
    // Prepare
    const { deps, marketplace, workflow } = jobFakes();
    marketplace.servers = [aServer(1, underTarget)];
    // Act
    await runPriceAlert({ ...input, wait_seconds: 3600 }, deps, {
      task_id: ALERT_TASK,
      origin: { source: 'webhook' },
      now: NOW,
    });
    // Assess
    expect(workflow.started[0]?.input.request.wait_seconds).toBe(3600);
    expect(workflow.started[0]?.input.timing).toMatchObject({
      waiting_until: Math.floor(NOW / 1000) + 3600,
      accepted_at: NOW,
    });
  });

  it("admits an alert's standing order under the waiting queue's caps: 8 alerts of one key under a cap of 3, the 4th on refused (issue 38 §1)", async () => {
    // Prepare: a server under the target (every alert matches); the queued orders stay waiting
    const { deps, marketplace, workflow, tasks } = jobFakes();
    marketplace.servers = [aServer(1, underTarget)];
    const waiting = new FakeWaitingTasks();
    const capped = { ...deps, standing: { waiting, caps: { perKey: 3, total: 100 } } };
    const origin = { source: 'webhook' as const, caller: { key: 'ci' } };
    // Act
    const results = [];
    for (let i = 0; i < 8; i += 1)
      results.push(
        await runPriceAlert({ ...input, wait_seconds: 3600 }, capped, { task_id: `alert-${i}`, origin, now: NOW + i }),
      );
    // Assess: 3 queued (their places taken before they were recorded), 5 refused with the cap's text, nothing of theirs recorded
    expect(results.filter((r) => r.success)).toHaveLength(3);
    expect(results.slice(3)).toEqual(
      Array.from({ length: 5 }, () => ({ success: false, error: 'too many waiting orders (3 for key ci)' })),
    );
    expect(workflow.started).toHaveLength(3);
    expect([...waiting.entries.values()].map((e) => [e.key_name, e.pending])).toEqual([
      ['ci', true],
      ['ci', true],
      ['ci', true],
    ]);
    expect(await tasks.get(priceAlertOrderTaskId('alert-3'))).toBeUndefined();
  });

  it("gives back an alert's place when its create-order cannot be started (issue 38 §1)", async () => {
    const { deps, marketplace, workflow } = jobFakes();
    marketplace.servers = [aServer(1, underTarget)];
    const waiting = new FakeWaitingTasks();
    workflow.fail = new Error('states unavailable');
    const capped = { ...deps, standing: { waiting, caps: { perKey: 3, total: 100 } } };
    await expect(
      runPriceAlert({ ...input, wait_seconds: 3600 }, capped, {
        task_id: ALERT_TASK,
        origin: { source: 'webhook' },
        now: NOW,
      }),
    ).rejects.toThrow('states unavailable');
    expect(waiting.entries.size).toBe(0);
  });

  it('returns Price not met and starts nothing when no server is at or under the target', async () => {
    // Prepare
    const { deps, marketplace, workflow, tasks, notifier } = jobFakes();
    marketplace.servers = [
      aServer(1, {
        price: { on_demand: {}, spot: { 'NATIVE-Blockchain': 9 }, usd_per_hour: { on_demand: {}, spot: 0.51 } },
      }),
    ];
    // Act
    const result = await runPriceAlert(input, deps, { task_id: ALERT_TASK, origin: { source: 'webhook' }, now: NOW });
    // Assess
    expect(result).toEqual({ success: false, message: PRICE_NOT_MET });
    expect(workflow.started).toEqual([]);
    expect(tasks.records.size).toBe(0);
    expect(notifier.chats).toEqual([]);
  });

  it('records a queued create-order task, starts its workflow and tells the chat on a match', async () => {
    // Prepare
    const { deps, marketplace, workflow, tasks, notifier } = jobFakes();
    marketplace.servers = [
      aServer(1, { rented: true }),
      aServer(2, { gpu_array: ['NVIDIA A100'], specs: { gpu: '1x NVIDIA A100', cpu: 'x', ram: 1, disk: 'd' } }),
      aServer(3, {
        price: { on_demand: {}, spot: { 'NATIVE-Blockchain': 4 }, usd_per_hour: { on_demand: {}, spot: 0.5 } },
      }),
    ];
    // Act
    const responseUrl = 'https://hooks.slack.example/commands/T1/2/tok';
    const result = await runPriceAlert(input, deps, {
      task_id: ALERT_TASK,
      origin: { source: 'slack', responseUrl },
      now: NOW,
    });
    // Assess
    const childId = priceAlertOrderTaskId(ALERT_TASK);
    expect(result).toEqual({ success: true, message: expect.stringContaining(childId), task_id: childId });
    // The caller's URLs are in the record (the deliverers read them there), not in the workflow input.
    expect(tasks.records.get(childId)).toMatchObject({
      task_id: childId,
      kind: 'create-order',
      state: 'queued',
      origin: { source: 'slack', responseUrl },
      request: { callback_url: 'https://cb.example/hook' },
    });
    expect(workflow.started).toEqual([
      {
        taskId: childId,
        input: {
          task_id: childId,
          request: {
            gpu_type: '4090',
            max_price: 0.5,
            image: 'my/image:1',
            currency: 'NATIVE-Blockchain',
            ports: { '22': 'tcp', '8888': 'http' },
            use_spot: true,
          },
          origin: { source: 'slack' },
          timing: { poll_interval_seconds: 5, ready_timeout_seconds: 120, soft_deadline: NOW / 1000 + 300 },
        },
      },
    ]);
    expect(notifier.chats).toHaveLength(1);
    expect(notifier.chats[0]).toContain('RTX 4090');
    expect(notifier.chats[0]).toContain('$0.5');
  });

  it('gives the queued create-order the DEFAULT_MAX_HOURS lease and matches only servers that allow it', async () => {
    // Prepare: server 3 allows 1 h rentals, server 4 allows 24 h; the default lease is 2 h
    const { deps, marketplace, workflow } = jobFakes();
    marketplace.servers = [aServer(3, { ...underTarget, mrl: 1 }), aServer(4, { ...underTarget, mrl: 24 })];
    const leased = { ...deps, config: { ...deps.config, defaultMaxHours: 2 } };
    // Act
    const result = await runPriceAlert(input, leased, { task_id: ALERT_TASK, origin: { source: 'webhook' }, now: NOW });
    // Assess
    expect(result).toMatchObject({ success: true });
    expect(workflow.started[0]?.input.request).toMatchObject({ max_hours: 2 });
    // With only the 1 h server the price is "not met": no server can carry the lease.
    const short = jobFakes();
    short.marketplace.servers = [aServer(3, { ...underTarget, mrl: 1 })];
    const none = await runPriceAlert(
      input,
      { ...short.deps, config: { ...short.deps.config, defaultMaxHours: 2 } },
      { task_id: 'alert-2', origin: { source: 'webhook' }, now: NOW },
    );
    expect(none).toEqual({ success: false, message: PRICE_NOT_MET });
  });

  it('does not start a second create-order task when a retried alert already created one', async () => {
    // Prepare
    const { deps, marketplace, workflow } = jobFakes();
    marketplace.servers = [aServer(3, underTarget)];
    const ctx = { task_id: ALERT_TASK, origin: { source: 'webhook' as const }, now: NOW };
    const first = await runPriceAlert(input, deps, ctx);
    // Act
    const second = await runPriceAlert(input, deps, ctx);
    // Assess
    expect(second).toMatchObject({ success: true, task_id: first.success ? first.task_id : 'none' });
    expect(workflow.started).toHaveLength(1);
  });

  it('starts the workflow of a create-order task an earlier attempt recorded but did not start', async () => {
    // Prepare: the first attempt recorded the task, then stopped (crash, timeout) before the start.
    const { deps, marketplace, workflow, tasks } = jobFakes();
    marketplace.servers = [aServer(3, underTarget)];
    const ctx = { task_id: ALERT_TASK, origin: { source: 'webhook' as const }, now: NOW };
    workflow.fail = new Error('crashed here');
    const removeSpy = jest.spyOn(tasks, 'remove').mockRejectedValueOnce(new Error('crashed before the undo'));
    await expect(runPriceAlert(input, deps, ctx)).rejects.toThrow('crashed');
    removeSpy.mockRestore();
    const childId = priceAlertOrderTaskId(ALERT_TASK);
    expect(tasks.records.get(childId)?.state).toBe('queued');
    expect(workflow.started).toEqual([]);
    workflow.fail = undefined;
    marketplace.servers = []; // the price moved since: the recorded task is started anyway
    // Act
    const retried = await runPriceAlert(input, deps, { ...ctx, now: NOW + 60_000 });
    // Assess
    expect(retried).toMatchObject({ success: true, task_id: childId });
    expect(workflow.started).toHaveLength(1);
    // Timed from the task's creation, not from the retry.
    expect(workflow.started[0].input.timing.soft_deadline).toBe(NOW / 1000 + 300);
    expect(workflow.started[0].input.request).toMatchObject({ gpu_type: '4090', max_price: 0.5, use_spot: true });
  });

  it('starts the workflow when recording reports "already exists" (its own write, whose answer was lost)', async () => {
    // Prepare: the put landed, its answer did not; the SDK's retry of it then fails its condition.
    const { deps, marketplace, workflow, tasks, notifier } = jobFakes();
    marketplace.servers = [aServer(3, underTarget)];
    const realCreate = tasks.create.bind(tasks);
    jest.spyOn(tasks, 'create').mockImplementationOnce(async (record) => {
      await realCreate(record);
      await realCreate(record); // throws TaskAlreadyExistsError, as the adapter would
    });
    // Act
    const result = await runPriceAlert(input, deps, { task_id: ALERT_TASK, origin: { source: 'webhook' }, now: NOW });
    // Assess
    expect(result).toMatchObject({ success: true, task_id: priceAlertOrderTaskId(ALERT_TASK) });
    expect(workflow.started).toHaveLength(1);
    expect(notifier.chats).toHaveLength(1);
  });

  it("keeps a create-order task it did not see itself create when the start fails (a concurrent delivery's), and its retry starts it", async () => {
    // Prepare: a concurrent delivery of the same alert records the task between our lookup and our create.
    const { deps, marketplace, workflow, tasks } = jobFakes();
    marketplace.servers = [aServer(3, underTarget)];
    const childId = priceAlertOrderTaskId(ALERT_TASK);
    const ctx = { task_id: ALERT_TASK, origin: { source: 'webhook' as const }, now: NOW };
    jest.spyOn(tasks, 'get').mockImplementationOnce(async () => {
      tasks.seed(childId, { kind: 'create-order', created_at: new Date(NOW).toISOString() });
      return undefined;
    });
    workflow.fail = new Error('states unavailable');
    // Act
    await expect(runPriceAlert(input, deps, ctx)).rejects.toThrow('states unavailable');
    // Assess: the record stays for the retry, which starts it
    expect(tasks.removed).toEqual([]);
    workflow.fail = undefined;
    await runPriceAlert(input, deps, ctx);
    expect(workflow.started.map((s) => s.taskId)).toEqual([childId]);
  });

  it('does not start again a create-order task that has left the queue', async () => {
    const { deps, marketplace, workflow, tasks } = jobFakes();
    marketplace.servers = [aServer(3, underTarget)];
    const ctx = { task_id: ALERT_TASK, origin: { source: 'webhook' as const }, now: NOW };
    await runPriceAlert(input, deps, ctx);
    const childId = priceAlertOrderTaskId(ALERT_TASK);
    tasks.records.set(childId, { ...tasks.records.get(childId)!, state: 'succeeded' });
    await runPriceAlert(input, deps, ctx);
    expect(workflow.calls).toEqual([childId]);
  });

  it('removes the new task record when the workflow cannot be started, and throws', async () => {
    // Prepare
    const { deps, marketplace, workflow, tasks, notifier } = jobFakes();
    marketplace.servers = [aServer(3, underTarget)];
    workflow.fail = new Error('states unavailable');
    // Act + Assess
    await expect(
      runPriceAlert(input, deps, { task_id: ALERT_TASK, origin: { source: 'webhook' }, now: NOW }),
    ).rejects.toThrow('states unavailable');
    expect(tasks.records.size).toBe(0);
    expect(notifier.chats).toEqual([]);
  });

  it('derives distinct UUIDs for distinct alerts, the same one for the same alert', () => {
    const a = priceAlertOrderTaskId(ALERT_TASK);
    expect(a).toMatch(/^[0-9a-f]{8}-[0-9a-f]{4}-5[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/);
    expect(priceAlertOrderTaskId(ALERT_TASK)).toBe(a);
    expect(priceAlertOrderTaskId('another')).not.toBe(a);
  });
});

describe('Function: runJob', () => {
  it('dispatches by kind', async () => {
    const { deps, marketplace } = jobFakes();
    marketplace.orders = [anOrder(9, { status: 'running' })];
    await expect(
      runJob({ task_id: 't', kind: 'status', input: {}, origin: { source: 'webhook' } }, deps, NOW),
    ).resolves.toMatchObject({ total_orders: 1, active: 1 });
    await expect(
      runJob({ task_id: 't', kind: 'cancel-order', input: { order_id: 9 }, origin: { source: 'webhook' } }, deps, NOW),
    ).resolves.toMatchObject({ order_id: 9 });
  });

  it('runs extend-order: an active order without a lease gets one ending now + hours (Unix seconds)', async () => {
    // Prepare
    const { deps, marketplace, leases } = jobFakes();
    marketplace.orders = [anOrder(9, { status: 'running' })];
    // Act
    const result = await runJob(
      { task_id: 't-ext', kind: 'extend-order', input: { order_id: 9, hours: 2 }, origin: { source: 'webhook' } },
      deps,
      NOW,
    );
    // Assess
    expect(result).toEqual({ success: true, order_id: 9, lease_expires_at: NOW / 1000 + 7_200 });
    expect(await leases.get(9)).toMatchObject({
      order_id: 9,
      task_id: 't-ext',
      expires_at: NOW / 1000 + 7_200,
      hours: 2,
    });
  });

  it('ends extend-order of an order that is not active with the failure result (no throw, so no retry)', async () => {
    const { deps, marketplace } = jobFakes();
    marketplace.orders = [anOrder(9, { status: 'expired' })];
    await expect(
      runJob(
        { task_id: 't', kind: 'extend-order', input: { order_id: 9, hours: 1 }, origin: { source: 'webhook' } },
        deps,
        NOW,
      ),
    ).resolves.toEqual({ success: false, error: 'order 9 is not active' });
  });

  it('runs set-spot-price: success, a marketplace refusal as a failure naming the reason, a transient error thrown', async () => {
    // Prepare
    const { deps, marketplace } = jobFakes();
    marketplace.orders = [anOrder(9, { status: 'running', type: 'spot', price: 5 })];
    const job = {
      task_id: 't',
      kind: 'set-spot-price' as const,
      input: { order_id: 9, desired_price: 6 },
      origin: { source: 'webhook' as const },
    };
    // Act + Assess: success
    // The server is not listed here: the USD figure is unknown (null), never a reason to fail.
    await expect(runJob(job, deps, NOW)).resolves.toEqual({
      success: true,
      order_id: 9,
      desired_price: 6,
      currency: 'bitcoin',
      desired_price_usd_per_hour: null,
    });
    expect(marketplace.spotPriceCalls).toEqual([{ order_id: 9, price: 6 }]);
    // A business refusal: a failure result
    jest.spyOn(marketplace, 'setSpotPrice').mockRejectedValueOnce(new MarketplaceRejectedError('too_low_price'));
    const refused = await runJob(job, deps, NOW);
    expect(refused).toMatchObject({ success: false });
    expect((refused as { error: string }).error).toContain('too_low_price');
    // A transient error: thrown, so the worker retries it
    jest.spyOn(marketplace, 'setSpotPrice').mockRejectedValueOnce(new MarketplaceUnavailableError('down'));
    await expect(runJob(job, deps, NOW)).rejects.toBeInstanceOf(MarketplaceUnavailableError);
    expect(isRetryable(new MarketplaceUnavailableError('down'))).toBe(true);
  });

  it('refuses a second spot decrease within 600 s itself, without a marketplace call', async () => {
    const { deps, marketplace } = jobFakes();
    marketplace.orders = [anOrder(9, { status: 'running', type: 'spot', price: 5 })];
    const job = {
      task_id: 't',
      kind: 'set-spot-price' as const,
      input: { order_id: 9, desired_price: 4 },
      origin: { source: 'webhook' as const },
    };
    await expect(runJob(job, deps, NOW)).resolves.toMatchObject({ success: true });
    const second = await runJob(job, deps, NOW + 599_000);
    expect(second).toMatchObject({ success: false });
    expect(marketplace.spotPriceCalls).toHaveLength(1);
  });
});

describe('Function: retry policy', () => {
  it('waits 2, 4 and 8 seconds after the 1st, 2nd and 3rd failed receive', () => {
    expect([1, 2, 3].map(retryDelaySeconds)).toEqual([2, 4, 8]);
  });

  it('treats the 4th receive (after the 3rd retry) as the final attempt', () => {
    expect([1, 2, 3, 4, 5].map(isFinalAttempt)).toEqual([false, false, false, true, true]);
  });

  it('retries ordinary errors but not a passed soft limit', () => {
    expect(isRetryable(new MarketplaceUnavailableError('down'))).toBe(true);
    expect(isRetryable(new SoftTimeoutError())).toBe(false);
  });
});
