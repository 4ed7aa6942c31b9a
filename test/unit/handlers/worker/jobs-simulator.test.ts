/** The jobs against the marketplace simulator over real HTTP (the HTTP client, its schemas and result codes). */
import type { SQSRecord } from 'aws-lambda';
import { startSimulator, type MarketplaceSimulator } from '../../../../local/simulator/marketplace-simulator';
import { HttpMarketplaceClient } from '../../../../lambdas/marketplace/http-marketplace-client';
import { InMemoryPacingGate } from '../../../../lambdas/marketplace/in-memory-pacing-gate';
import { findMatchingServer } from '../../../../lambdas/domain/hosts/matching';
import { priceAlertOrderTaskId } from '../../../../lambdas/domain/requests/jobs';
import { createJobWorkerHandler } from '../../../../lambdas/handlers/worker/job-worker';
import { jobConfig } from '../../../fakes/deps';
import { FakeLeaseStore } from '../../../fakes/lease-store';
import { FakeVisibility } from '../../../fakes/message-visibility';
import { anSqsRecord } from '../../../fakes/sqs';
import { FakeNotifier } from '../../../fakes/notifier';
import { FakeTasks } from '../../../fakes/tasks';
import { FakeWorkflow } from '../../../fakes/workflow-starter';

const record = (body: unknown, messageId: string): SQSRecord => anSqsRecord(body, messageId);

describe('Job worker against the marketplace simulator', () => {
  let sim: MarketplaceSimulator;
  let marketplace: HttpMarketplaceClient;

  beforeAll(async () => {
    sim = await startSimulator({ port: 0, seed: 7, readyDelayMs: 0, rateLimit: false, minIntervalMs: 0 });
    marketplace = new HttpMarketplaceClient({
      baseUrl: sim.url,
      apiKey: async () => sim.apiKey,
      pacing: new InMemoryPacingGate(),
      minIntervalMs: 0,
      timeoutMs: 5_000,
    });
  });
  afterAll(async () => {
    await sim.close();
  });
  beforeEach(() => sim.control.reset());

  const setup = () => {
    const tasks = new FakeTasks();
    const notifier = new FakeNotifier();
    const workflow = new FakeWorkflow();
    const worker = createJobWorkerHandler({
      marketplace,
      tasks,
      notifier,
      workflow,
      leases: new FakeLeaseStore(),
      config: jobConfig,
      visibility: new FakeVisibility(),
    });
    return { tasks, notifier, workflow, worker };
  };

  it('matches a price alert at the cheapest spot price and starts a create-order workflow', async () => {
    // Prepare: the target is the cheapest spot price of a GPU model that has a matching server
    const { tasks, notifier, workflow, worker } = setup();
    const servers = await marketplace.listServers();
    const criteria = { gpu_type: '4090', currency: jobConfig.defaultCurrency, use_spot: true };
    const candidates = servers.filter((s) => findMatchingServer([s], criteria));
    expect(candidates.length).toBeGreaterThan(0);
    const target = Math.min(...candidates.map((s) => s.price.usd_per_hour.spot ?? Infinity));
    tasks.seed('alert-1', { kind: 'price-alert' });
    // Act
    const response = await worker({
      Records: [
        record(
          {
            task_id: 'alert-1',
            kind: 'price-alert',
            input: { gpu_type: '4090', target_price: target, image: 'img:1', callback_url: 'http://127.0.0.1:9/cb' },
            origin: { source: 'webhook' },
          },
          'a1',
        ),
      ],
    });
    // Assess
    expect(response).toEqual({ batchItemFailures: [] });
    const childId = priceAlertOrderTaskId('alert-1');
    expect(tasks.finishes).toEqual([
      {
        taskId: 'alert-1',
        state: 'succeeded',
        result: { success: true, message: expect.any(String), task_id: childId },
      },
    ]);
    expect(workflow.started).toHaveLength(1);
    expect(workflow.started[0]?.input.request).toMatchObject({
      gpu_type: '4090',
      max_price: target,
      use_spot: true,
      image: 'img:1',
    });
    expect(notifier.chats).toHaveLength(1);
    expect(notifier.chats[0]).toContain(`$${target}`);
    expect(notifier.callbacks[0]?.url).toBe('http://127.0.0.1:9/cb');
  });

  it('answers Price not met below every spot price', async () => {
    const { tasks, workflow, worker } = setup();
    tasks.seed('alert-2', { kind: 'price-alert' });
    await worker({
      Records: [
        record(
          {
            task_id: 'alert-2',
            kind: 'price-alert',
            input: { gpu_type: '4090', target_price: 0.0001, image: 'img:1' },
            origin: { source: 'webhook' },
          },
          'a2',
        ),
      ],
    });
    expect(tasks.finishes[0]).toMatchObject({ state: 'failed', result: { success: false, message: 'Price not met' } });
    expect(workflow.started).toEqual([]);
  });

  it('cancels an order and then reports it gone from the status', async () => {
    // Prepare: one order to cancel
    const { tasks, notifier, worker } = setup();
    const server = findMatchingServer(await marketplace.listServers(), {
      gpu_type: 'NVIDIA',
      currency: jobConfig.defaultCurrency,
      use_spot: false,
    });
    if (!server) throw new Error('the seeded catalogue has no on-demand server');
    const { order_id } = await marketplace.createOrder({
      renting_server: server.id,
      type: 'on-demand',
      currency: jobConfig.defaultCurrency,
      image: 'img:1',
    });
    if (order_id === undefined) throw new Error('no order id');
    tasks.seed('status-1', { kind: 'status' });
    tasks.seed('cancel-1', { kind: 'cancel-order' });
    tasks.seed('status-2', { kind: 'status' });
    // Act
    const response = await worker({
      Records: [
        record({ task_id: 'status-1', kind: 'status', input: {}, origin: { source: 'webhook' } }, 's1'),
        record({ task_id: 'cancel-1', kind: 'cancel-order', input: { order_id }, origin: { source: 'webhook' } }, 'c1'),
        record({ task_id: 'status-2', kind: 'status', input: {}, origin: { source: 'webhook' } }, 's2'),
      ],
    });
    // Assess
    expect(response).toEqual({ batchItemFailures: [] });
    const [before, cancel, after] = tasks.finishes;
    expect(before?.result).toMatchObject({ total_orders: 1, orders: [expect.objectContaining({ order_id })] });
    expect(cancel?.result).toEqual({ success: true, order_id, status: 'cancelled' });
    expect(after?.result).toMatchObject({ total_orders: 0, orders: [] });
    expect(notifier.chats).toEqual([`Order ${order_id} cancelled`]);
    expect(sim.control.orders().find((o) => o.order_id === order_id)).toMatchObject({
      completed: true,
      end_reason: 'cancelled',
    });
  });
});
