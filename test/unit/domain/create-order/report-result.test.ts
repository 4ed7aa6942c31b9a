import { reportResult, workflowResult } from '../../../../lambdas/domain/create-order/report-result';
import type { SearchResult } from '../../../../lambdas/domain/create-order/workflow-state';
import { orderReadyText } from '../../../../lambdas/domain/requests/chat-messages';
import { aState } from '../../../fakes/builders';
import { FakeClaims } from '../../../fakes/claims';
import { FakeLeaseStore } from '../../../fakes/lease-store';
import { FakeNotifier } from '../../../fakes/notifier';
import { FakeTasks } from '../../../fakes/tasks';

const NOW = 1_000_000;
/** What ingress records: the caller's URLs live in the task record, not in the workflow input. */
const RECORDED = { request: { gpu_type: '4090', callback_url: 'http://cb.example/hook' } };
const search = (id = 1, attempt = 1, excluded: number[] = []): SearchResult => ({
  server: { id, gpu_array: ['NVIDIA RTX 4090'], price_usd: 0.6, spot_bid: 5.5 },
  attempt,
  excluded,
});

describe('Function: workflowResult', () => {
  it('reports the configured readiness timeout', () => {
    const state = aState({
      timing: { poll_interval_seconds: 1, ready_timeout_seconds: 42, soft_deadline: 0 },
      check: { ready: false, timedOut: true, reason: 'ready_timeout' },
    });
    expect(workflowResult(state)).toEqual({ success: false, error: 'Order creation timed out after 42 s' });
  });

  it('builds the success result from the chosen server and the order', () => {
    const state = aState({
      search: search(4),
      check: { ready: true, timedOut: false, order: { order_id: 9, status: 'running', ssh_connection: 'ssh x' } },
    });
    expect(workflowResult(state)).toEqual({
      success: true,
      order_id: 9,
      server_id: 4,
      status: 'running',
      ssh_connection: 'ssh x',
      gpu: ['NVIDIA RTX 4090'],
      price_usd: 0.6,
      // How to get in (issue 37 §4): read from the ssh line; no host key without a login.
      access: { ssh: { host: 'x', port: 22, user: 'root', command: 'ssh root@x' } },
    });
  });

  it('carries the bid in USD per hour beside price_usd, and the all-in price with the renter fee (issue 38 §8)', () => {
    const placed = search(4);
    const state = aState({
      search: {
        ...placed,
        server: { ...placed.server, price_usd: 0.24, usd_per_hour: 0.25, all_in_usd_per_hour: 0.2625 },
      },
      check: { ready: true, timedOut: false, order: { order_id: 9, status: 'running', ssh_connection: 'ssh x' } },
    });
    expect(workflowResult(state)).toMatchObject({
      price_usd: 0.24,
      bid_usd_per_hour: 0.25,
      all_in_usd_per_hour: 0.2625,
    });
  });
});

describe('Function: reportResult', () => {
  const ready = aState({
    search: search(4),
    check: { ready: true, timedOut: false, order: { order_id: 9, status: 'running', ssh_connection: 'ssh x' } },
  });

  it('delivers once, announces the ready order in chat and releases the claim', async () => {
    // Prepare
    const tasks = new FakeTasks();
    tasks.seed('task-1', RECORDED);
    const notifier = new FakeNotifier();
    const claims = new FakeClaims();
    claims.holders.set(4, 'task-1');
    // Act
    const leases = new FakeLeaseStore();
    const first = await reportResult(ready, { tasks, notifier, claims, leases }, NOW);
    const second = await reportResult(ready, { tasks, notifier, claims, leases }, NOW);
    // Assess
    expect(first).toMatchObject({ success: true, delivered: true });
    expect(second.delivered).toBe(false);
    expect(notifier.callbacks).toHaveLength(1);
    expect(notifier.callbacks[0]).toMatchObject({
      url: 'http://cb.example/hook',
      result: { success: true, order_id: 9 },
    });
    expect(notifier.chats).toEqual([
      orderReadyText({ order_id: 9, gpu: ['NVIDIA RTX 4090'], ssh_connection: 'ssh x' }),
    ]);
    expect(notifier.chats[0]).toContain('ssh x');
    expect(claims.holders.has(4)).toBe(false);
    expect(tasks.records.get('task-1')?.state).toBe('succeeded');
  });

  it('a retry after a final write that landed unseen delivers once; a retry after the delivery does not deliver again', async () => {
    // Prepare: the first attempt's final write lands, but its answer is lost (the call throws).
    const tasks = new FakeTasks();
    tasks.seed('task-1', RECORDED);
    const notifier = new FakeNotifier();
    const claims = new FakeClaims();
    const leases = new FakeLeaseStore();
    const realFinish = tasks.finish.bind(tasks);
    const finishSpy = jest.spyOn(tasks, 'finish').mockImplementationOnce(async (...args) => {
      await realFinish(...args);
      throw Object.assign(new Error('answer lost'), { name: 'TimeoutError' });
    });
    await expect(reportResult(ready, { tasks, notifier, claims, leases }, NOW)).rejects.toThrow('answer lost');
    finishSpy.mockRestore();
    expect(notifier.callbacks).toHaveLength(0);
    // Act: Step Functions retries the step, then (say after a crash) once more.
    const retried = await reportResult(ready, { tasks, notifier, claims, leases }, NOW + 2_000);
    const again = await reportResult(ready, { tasks, notifier, claims, leases }, NOW + 4_000);
    // Assess
    expect(retried.delivered).toBe(true);
    expect(again.delivered).toBe(false);
    expect(notifier.callbacks).toHaveLength(1);
    expect(tasks.finishers.every((f) => f === 'ReportResult')).toBe(true);
  });

  it('does not announce failures in chat', async () => {
    const tasks = new FakeTasks();
    tasks.seed('task-1', RECORDED);
    const notifier = new FakeNotifier();
    const leases = new FakeLeaseStore();
    await reportResult(
      aState({ error: { name: 'QuotaExceededError', message: 'Hourly order limit reached (10 per hour)' } }),
      { tasks, notifier, claims: new FakeClaims(), leases },
      NOW,
    );
    expect(notifier.chats).toHaveLength(0);
    expect(notifier.callbacks[0].result).toEqual({ success: false, error: 'Hourly order limit reached (10 per hour)' });
    expect(leases.orders.size).toBe(0);
  });

  it('records a ready order without a lease for the watch, and the result has no lease_expires_at', async () => {
    const tasks = new FakeTasks();
    tasks.seed('task-1', RECORDED);
    const leases = new FakeLeaseStore();
    const { result } = await reportResult(
      ready,
      { tasks, notifier: new FakeNotifier(), claims: new FakeClaims(), leases },
      NOW,
    );
    expect(result).not.toHaveProperty('lease_expires_at');
    expect(await leases.get(9)).toEqual({
      order_id: 9,
      task_id: 'task-1',
      callback_url: 'http://cb.example/hook',
      spot: true,
    });
    expect((await leases.watched()).get(9)).toMatchObject({ status: 'running' });
  });

  it('with lifecycle_events false (the CLI --wait listener) the result goes to callback_url, later events nowhere (issue 28)', async () => {
    // Prepare
    const tasks = new FakeTasks();
    tasks.seed('task-1', { request: { ...RECORDED.request, lifecycle_events: false } });
    const leases = new FakeLeaseStore();
    const notifier = new FakeNotifier();
    // Act
    await reportResult(ready, { tasks, notifier, claims: new FakeClaims(), leases }, NOW);
    // Assess: the result is delivered, the watched order has no callback_url for its events
    expect(notifier.callbacks).toHaveLength(1);
    expect(notifier.callbacks[0]).toMatchObject({ url: 'http://cb.example/hook' });
    expect(await leases.get(9)).toEqual({ order_id: 9, task_id: 'task-1', spot: true });
  });

  it('records a leased order with its end counted from readiness, and adds lease_expires_at to the result', async () => {
    // Prepare: ready at 5 000 000 ms (5 000 s), a 1.5 h lease; the report runs later
    const tasks = new FakeTasks();
    tasks.seed('task-1', RECORDED);
    const leases = new FakeLeaseStore();
    const notifier = new FakeNotifier();
    const leased = aState({
      request: { ...aState().request, max_hours: 1.5 },
      search: search(4),
      check: {
        ready: true,
        timedOut: false,
        order: { order_id: 9, status: 'running', ssh_connection: 'ssh x' },
        ready_at: 5_000_000,
      },
    });
    // Act
    const { result } = await reportResult(leased, { tasks, notifier, claims: new FakeClaims(), leases }, 7_000_000);
    // Assess
    expect(result).toMatchObject({ success: true, order_id: 9, lease_expires_at: 5_000 + 5_400 });
    expect(notifier.callbacks[0].result).toMatchObject({ lease_expires_at: 10_400 });
    expect(await leases.get(9)).toMatchObject({ order_id: 9, task_id: 'task-1', expires_at: 10_400, hours: 1.5 });
  });

  it('fails (for the state machine to retry) without a final result when the order cannot be recorded', async () => {
    // Prepare
    const tasks = new FakeTasks();
    tasks.seed('task-1', RECORDED);
    const notifier = new FakeNotifier();
    const leases = {
      track: jest
        .fn()
        .mockRejectedValueOnce(new Error('ProvisionedThroughputExceededException'))
        .mockResolvedValue(undefined),
    };
    // Act + Assess: the first attempt fails before any result is written or delivered
    await expect(reportResult(ready, { tasks, notifier, claims: new FakeClaims(), leases }, NOW)).rejects.toThrow(
      'ProvisionedThroughputExceededException',
    );
    expect(tasks.records.get('task-1')?.state).not.toBe('succeeded');
    expect(notifier.callbacks).toHaveLength(0);
    // The retried step records it and delivers the one result
    await expect(
      reportResult(ready, { tasks, notifier, claims: new FakeClaims(), leases }, NOW),
    ).resolves.toMatchObject({ success: true, delivered: true });
    expect(leases.track).toHaveBeenCalledTimes(2);
    expect(notifier.callbacks).toHaveLength(1);
  });

  it('delivers to the callback_url and Slack response_url of the task record; the workflow state carries neither', async () => {
    // Prepare
    const tasks = new FakeTasks();
    tasks.seed('task-1', {
      request: { callback_url: 'https://ci.example/hook?token=abc' },
      origin: { source: 'slack', responseUrl: 'https://hooks.slack.example/commands/T1/2/xyz' },
    });
    const notifier = new FakeNotifier();
    // Act
    await reportResult(ready, { tasks, notifier, claims: new FakeClaims(), leases: new FakeLeaseStore() }, NOW);
    // Assess
    expect(JSON.stringify(ready)).not.toMatch(/callback_url|responseUrl|ci\.example|hooks\.slack/);
    expect(notifier.callbacks).toEqual([expect.objectContaining({ url: 'https://ci.example/hook?token=abc' })]);
    expect(notifier.slackResponses).toEqual([
      expect.objectContaining({ url: 'https://hooks.slack.example/commands/T1/2/xyz' }),
    ]);
  });
});
