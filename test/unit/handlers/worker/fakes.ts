/** In-memory fakes of the ports the jobs and the worker use. */
import type { Order, Server } from '../../../../lambdas/domain/marketplace-types';
import type { CreateOrderWorkflowInput, MarketplaceClient, Notifier, TaskRepository, WorkflowStarter } from '../../../../lambdas/domain/ports';
import type { TaskRecord, TaskResult, TaskState } from '../../../../lambdas/domain/task';
import type { JobConfig, JobDeps } from '../../../../lambdas/domain/jobs';
import type { MessageVisibility } from '../../../../lambdas/handlers/worker/sqs-message-visibility';
import { FakeLeaseStore } from '../../domain/lease-fakes';

export const server = (overrides: Partial<Server> & { id: number }): Server => ({
  owner: 1,
  mrl: 720,
  rented: false,
  price: { on_demand: { 'NATIVE-Blockchain': 10 }, spot: { 'NATIVE-Blockchain': 5 }, usd: { on_demand: { 'NATIVE-Blockchain': 0.8 }, spot: 0.4 } },
  specs: { gpu: '1x NVIDIA GeForce RTX 4090', cpu: 'AMD EPYC', ram: 64, disk: '1TB NVMe' },
  gpu_array: ['NVIDIA RTX 4090'],
  reliability: 0.99,
  rating: { avg: 4.8, cnt: 12 },
  allowed_coins: ['NATIVE-Blockchain', 'bitcoin'],
  ...overrides,
});

export const order = (overrides: Partial<Order> & { order_id: number; status: string }): Order => ({
  renting_server: 7,
  type: 'spot',
  currency: 'NATIVE-Blockchain',
  price: 5,
  created: 1_700_000_000,
  started: 1_700_000_100,
  connection: {},
  ...overrides,
});

export class FakeMarketplace implements MarketplaceClient {
  public servers: Server[] = [];
  public orders: Order[] = [];
  public cancelled: number[] = [];
  public listOrdersOptions: ({ returnCompleted?: boolean } | undefined)[] = [];
  /** Errors thrown by the next calls of any method, in order. */
  public failures: Error[] = [];
  /** When set, every call waits on it (soft-deadline tests). */
  public hang?: Promise<never>;

  private async gate(): Promise<void> {
    if (this.hang) await this.hang;
    const next = this.failures.shift();
    if (next) throw next;
  }

  public async listServers() { await this.gate(); return this.servers; }
  public async listWallets() { await this.gate(); return []; }
  public async createOrder(): Promise<{ order_id: number | undefined }> { throw new Error('jobs never create orders'); }
  public async listOrders(options?: { returnCompleted?: boolean }) { await this.gate(); this.listOrdersOptions.push(options); return this.orders; }
  public async cancelOrder(orderId: number) { await this.gate(); this.cancelled.push(orderId); }
  public spotPrices: { orderId: number; price: number }[] = [];
  public async setSpotPrice(orderId: number, price: number) { await this.gate(); this.spotPrices.push({ orderId, price }); }
  public async spotMarket() { await this.gate(); return {}; }
}

export class FakeTasks implements TaskRepository {
  public readonly records = new Map<string, TaskRecord>();
  public readonly finishes: { taskId: string; state: TaskState; result: TaskResult }[] = [];
  public readonly updates: { taskId: string; state?: TaskState }[] = [];
  public failCreate?: Error;

  public async create(record: TaskRecord) {
    if (this.failCreate) throw this.failCreate;
    if (this.records.has(record.task_id)) throw new Error(`task ${record.task_id} already exists`);
    this.records.set(record.task_id, record);
  }
  public async get(taskId: string) { return this.records.get(taskId); }
  public async update(taskId: string, fields: { state?: TaskState }) {
    this.updates.push({ taskId, state: fields.state });
    const record = this.records.get(taskId);
    if (record && fields.state && record.state !== 'succeeded' && record.state !== 'failed') this.records.set(taskId, { ...record, state: fields.state });
  }
  public async finish(taskId: string, state: 'succeeded' | 'failed', result: TaskResult) {
    const record = this.records.get(taskId);
    if (record && (record.state === 'succeeded' || record.state === 'failed')) return false;
    this.finishes.push({ taskId, state, result });
    if (record) this.records.set(taskId, { ...record, state, result });
    return true;
  }
  public async remove(taskId: string) { this.records.delete(taskId); }

  /** Seeds a queued record as ingress would. */
  public seed(taskId: string, kind: TaskRecord['kind']): void {
    this.records.set(taskId, {
      task_id: taskId, kind, state: 'queued', request: {}, origin: { source: 'webhook' },
      created_at: '2025-01-01T00:00:00.000Z', updated_at: '2025-01-01T00:00:00.000Z',
    });
  }
}

export class FakeNotifier implements Notifier {
  public readonly chats: string[] = [];
  public readonly callbacks: { url: string; taskId: string; result: TaskResult }[] = [];
  public async callback(url: string, taskId: string, result: TaskResult) { this.callbacks.push({ url, taskId, result }); return true; }
  public async chat(text: string) { this.chats.push(text); }
}

export class FakeWorkflow implements WorkflowStarter {
  public readonly starts: { taskId: string; input: CreateOrderWorkflowInput }[] = [];
  public failure?: Error;
  public async start(taskId: string, input: CreateOrderWorkflowInput) {
    if (this.failure) throw this.failure;
    this.starts.push({ taskId, input });
  }
}

export class FakeVisibility implements MessageVisibility {
  public readonly changes: { receiptHandle: string; seconds: number }[] = [];
  public async change(receiptHandle: string, seconds: number) { this.changes.push({ receiptHandle, seconds }); }
}

export const jobConfig: JobConfig = {
  defaultCurrency: 'NATIVE-Blockchain',
  defaultPorts: { '22': 'tcp', '8888': 'http' },
  pollIntervalSeconds: 5,
  readyTimeoutSeconds: 120,
};

export const fakeDeps = () => {
  const marketplace = new FakeMarketplace();
  const tasks = new FakeTasks();
  const notifier = new FakeNotifier();
  const workflow = new FakeWorkflow();
  const leases = new FakeLeaseStore();
  const deps: JobDeps = { marketplace, tasks, notifier, workflow, leases, config: jobConfig };
  return { marketplace, tasks, notifier, workflow, leases, deps };
};
