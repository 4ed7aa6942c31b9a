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
} from '../../../lambdas/domain/jobs';
import { MarketplaceUnavailableError, SoftTimeoutError } from '../../../lambdas/domain/errors';
import { fakeDeps, order, server } from '../worker/fakes';

const NOW = Date.parse('2025-03-01T12:00:00.000Z');
const ALERT_TASK = '11111111-2222-4333-8444-555555555555';

describe('Function: runCancel', () => {
  it('cancels the order, tells the chat and returns the cancel result', async () => {
    // Prepare
    const { deps, marketplace, notifier } = fakeDeps();
    // Act
    const result = await runCancel({ order_id: 4242 }, deps);
    // Assess
    expect(result).toEqual({ success: true, order_id: 4242, status: 'cancelled' });
    expect(marketplace.cancelled).toEqual([4242]);
    expect(notifier.chats).toHaveLength(1);
    expect(notifier.chats[0]).toContain('4242');
    expect(notifier.chats[0]?.toLowerCase()).toContain('cancelled');
  });

  it('throws the marketplace error without telling the chat', async () => {
    // Prepare
    const { deps, marketplace, notifier } = fakeDeps();
    marketplace.failures.push(new MarketplaceUnavailableError('status 503'));
    // Act + Assess
    await expect(runCancel({ order_id: 1 }, deps)).rejects.toThrow('status 503');
    expect(notifier.chats).toEqual([]);
  });
});

describe('Function: runStatus', () => {
  it('counts running and creating orders and lists ssh lines of active orders only', async () => {
    // Prepare
    const { deps, marketplace } = fakeDeps();
    marketplace.orders = [
      order({ order_id: 1, status: 'running', connection: { ssh: 'ssh -p 2222 user@host1' } }),
      order({ order_id: 2, status: 'creating_order' }),
      order({ order_id: 3, status: 'running', connection: { ssh: 'ssh -p 2223 user@host2' } }),
      order({ order_id: 4, status: 'paused' }),
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

  it('summarizes an account without orders as zeros', () => {
    expect(summarizeOrders([])).toEqual({ total_orders: 0, active: 0, creating: 0, orders: [] });
  });
});

describe('Function: runPriceAlert', () => {
  const input = { gpu_type: '4090', target_price: 0.5, image: 'my/image:1', callback_url: 'https://cb.example/hook' };

  it('returns Price not met and starts nothing when no server is at or under the target', async () => {
    // Prepare
    const { deps, marketplace, workflow, tasks, notifier } = fakeDeps();
    marketplace.servers = [server({ id: 1, price: { on_demand: {}, spot: { 'NATIVE-Blockchain': 9 }, usd: { on_demand: {}, spot: 0.51 } } })];
    // Act
    const result = await runPriceAlert(input, deps, { task_id: ALERT_TASK, origin: { source: 'webhook' }, now: NOW });
    // Assess
    expect(result).toEqual({ success: false, message: PRICE_NOT_MET });
    expect(workflow.starts).toEqual([]);
    expect(tasks.records.size).toBe(0);
    expect(notifier.chats).toEqual([]);
  });

  it('records a queued create-order task, starts its workflow and tells the chat on a match', async () => {
    // Prepare
    const { deps, marketplace, workflow, tasks, notifier } = fakeDeps();
    marketplace.servers = [
      server({ id: 1, rented: true }),
      server({ id: 2, gpu_array: ['NVIDIA A100'], specs: { gpu: '1x NVIDIA A100', cpu: 'x', ram: 1, disk: 'd' } }),
      server({ id: 3, price: { on_demand: {}, spot: { 'NATIVE-Blockchain': 4 }, usd: { on_demand: {}, spot: 0.5 } } }),
    ];
    // Act
    const result = await runPriceAlert(input, deps, { task_id: ALERT_TASK, origin: { source: 'slack' }, now: NOW });
    // Assess
    const childId = priceAlertOrderTaskId(ALERT_TASK);
    expect(result).toEqual({ success: true, message: expect.stringContaining(childId), task_id: childId });
    expect(tasks.records.get(childId)).toMatchObject({ task_id: childId, kind: 'create-order', state: 'queued', origin: { source: 'slack' } });
    expect(workflow.starts).toEqual([{
      taskId: childId,
      input: {
        task_id: childId,
        request: {
          gpu_type: '4090', max_price: 0.5, image: 'my/image:1', currency: 'NATIVE-Blockchain',
          ports: { '22': 'tcp', '8888': 'http' }, use_spot: true, callback_url: 'https://cb.example/hook',
        },
        origin: { source: 'slack' },
        timing: { poll_interval_seconds: 5, ready_timeout_seconds: 120, soft_deadline: NOW / 1000 + 300 },
      },
    }]);
    expect(notifier.chats).toHaveLength(1);
    expect(notifier.chats[0]).toContain('RTX 4090');
    expect(notifier.chats[0]).toContain('$0.5');
  });

  it('does not start a second create-order task when a retried alert already created one', async () => {
    // Prepare
    const { deps, marketplace, workflow } = fakeDeps();
    marketplace.servers = [server({ id: 3 })];
    const ctx = { task_id: ALERT_TASK, origin: { source: 'webhook' as const }, now: NOW };
    const first = await runPriceAlert(input, deps, ctx);
    // Act
    const second = await runPriceAlert(input, deps, ctx);
    // Assess
    expect(second).toMatchObject({ success: true, task_id: first.success ? first.task_id : 'none' });
    expect(workflow.starts).toHaveLength(1);
  });

  it('removes the new task record when the workflow cannot be started, and throws', async () => {
    // Prepare
    const { deps, marketplace, workflow, tasks, notifier } = fakeDeps();
    marketplace.servers = [server({ id: 3 })];
    workflow.failure = new Error('states unavailable');
    // Act + Assess
    await expect(runPriceAlert(input, deps, { task_id: ALERT_TASK, origin: { source: 'webhook' }, now: NOW })).rejects.toThrow('states unavailable');
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
    const { deps, marketplace } = fakeDeps();
    marketplace.orders = [order({ order_id: 9, status: 'running' })];
    await expect(runJob({ task_id: 't', kind: 'status', input: {}, origin: { source: 'webhook' } }, deps, NOW)).resolves.toMatchObject({ total_orders: 1, active: 1 });
    await expect(runJob({ task_id: 't', kind: 'cancel-order', input: { order_id: 9 }, origin: { source: 'webhook' } }, deps, NOW)).resolves.toMatchObject({ order_id: 9 });
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
