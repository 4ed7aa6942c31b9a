/** In-memory fakes of the ports the create-order workflow uses (unit tests only). */
import type { CreateOrderRequest, Order, Server } from '../../../../lambdas/domain/marketplace-types';
import type { MarketplaceClient, Notifier, ServerClaims, SlidingWindow, TaskRepository } from '../../../../lambdas/domain/ports';
import type { TaskRecord, TaskResult, TaskState } from '../../../../lambdas/domain/task';
import type { WorkflowState } from '../../../../lambdas/domain/create-order-steps';

export const NATIVE = 'NATIVE-Blockchain';

export const aServer = (id: number, patch: Partial<Server> = {}): Server => ({
  id,
  owner: 1,
  mrl: 24,
  rented: false,
  price: { on_demand: { [NATIVE]: 10 }, spot: { [NATIVE]: 5 }, usd: { on_demand: { [NATIVE]: 1.2 }, spot: 0.6 } },
  specs: { gpu: '1x NVIDIA RTX 4090', cpu: 'x', ram: 64, disk: '1TB' },
  gpu_array: ['NVIDIA RTX 4090'],
  reliability: 0.99,
  rating: { avg: 5, cnt: 3 },
  allowed_coins: [NATIVE],
  ...patch,
});

export const anOrder = (order_id: number, renting_server: number, created: number, status = 'creating_order'): Order => ({
  order_id,
  renting_server,
  type: 'spot',
  status,
  currency: NATIVE,
  price: 1,
  created,
  started: created,
  connection: { ssh: `ssh -p 2222 root@host${order_id}` },
});

export const aState = (patch: Partial<WorkflowState> = {}): WorkflowState => ({
  task_id: 'task-1',
  request: { gpu_type: '4090', image: 'img', currency: NATIVE, ports: { '22': 'tcp' }, use_spot: true, callback_url: 'http://cb.example/hook' },
  origin: { source: 'webhook' },
  timing: { poll_interval_seconds: 5, ready_timeout_seconds: 120, soft_deadline: 1_000_000_000 },
  ...patch,
});

/** A marketplace whose behaviour tests script. */
export class FakeMarketplace implements MarketplaceClient {
  public servers: Server[] = [];
  public orders: Order[] = [];
  public created: CreateOrderRequest[] = [];
  public cancelled: number[] = [];
  /** Scripted createOrder outcomes, consumed in order; default: a new order id. */
  public createOutcomes: (() => Promise<{ order_id: number | undefined }>)[] = [];
  public cancelError?: Error;
  private nextId = 100;

  public async listServers() { return this.servers; }
  public async listWallets() { return []; }
  public async createOrder(request: CreateOrderRequest) {
    this.created.push(request);
    const scripted = this.createOutcomes.shift();
    if (scripted) return scripted();
    const order_id = this.nextId++;
    this.orders.push(anOrder(order_id, request.renting_server, 1_000));
    return { order_id };
  }
  public async listOrders() { return this.orders; }
  public async cancelOrder(orderId: number) {
    if (this.cancelError) throw this.cancelError;
    this.cancelled.push(orderId);
  }
  public async setSpotPrice() {}
  public async spotMarket() { return {}; }
}

export class FakeTasks implements TaskRepository {
  public records = new Map<string, TaskRecord>();
  public finished: { taskId: string; state: string; result: TaskResult }[] = [];

  public seed(taskId = 'task-1', patch: Partial<TaskRecord> = {}): void {
    this.records.set(taskId, {
      task_id: taskId, kind: 'create-order', state: 'queued', request: {}, origin: { source: 'webhook' },
      created_at: new Date(0).toISOString(), updated_at: new Date(0).toISOString(), ...patch,
    });
  }
  public async create(record: TaskRecord) { this.records.set(record.task_id, record); }
  public async get(taskId: string) { return this.records.get(taskId); }
  public async update(taskId: string, fields: { state?: TaskState; order_id?: number; server_id?: number; order_intent_at?: number; order_cancelled?: boolean }, now: number) {
    const r = this.records.get(taskId);
    if (!r) return;
    const defined = Object.fromEntries(Object.entries(fields).filter(([, v]) => v !== undefined));
    this.records.set(taskId, { ...r, ...defined, updated_at: new Date(now).toISOString() });
  }
  public async finish(taskId: string, state: 'succeeded' | 'failed', result: TaskResult, now: number) {
    const r = this.records.get(taskId);
    if (!r || r.state === 'succeeded' || r.state === 'failed') return false;
    this.records.set(taskId, { ...r, state, result, finished_at: new Date(now).toISOString() });
    this.finished.push({ taskId, state, result });
    return true;
  }
  public async remove(taskId: string) { this.records.delete(taskId); }
}

export class FakeClaims implements ServerClaims {
  public holders = new Map<number, string>();
  public async claim(serverId: number, taskId: string) {
    const holder = this.holders.get(serverId);
    if (holder && holder !== taskId) return false;
    this.holders.set(serverId, taskId);
    return true;
  }
  public async release(serverId: number, taskId: string) {
    if (this.holders.get(serverId) === taskId) this.holders.delete(serverId);
  }
}

export class FakeWindow implements SlidingWindow {
  public events = new Map<string, Set<string>>();
  public async hit(key: string, opts: { limit: number; eventId: string }) {
    const set = this.events.get(key) ?? new Set<string>();
    this.events.set(key, set);
    if (set.has(opts.eventId)) return { allowed: true, retryAfterMs: 0, count: set.size };
    if (set.size >= opts.limit) return { allowed: false, retryAfterMs: 1000, count: set.size };
    set.add(opts.eventId);
    return { allowed: true, retryAfterMs: 0, count: set.size };
  }
}

export class FakeNotifier implements Notifier {
  public callbacks: { url: string; taskId: string; result: TaskResult }[] = [];
  public chats: string[] = [];
  public async callback(url: string, taskId: string, result: TaskResult) {
    this.callbacks.push({ url, taskId, result });
    return true;
  }
  public async chat(text: string) { this.chats.push(text); }
}
