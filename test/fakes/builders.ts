/** Shared builders of domain values for tests: a server, an order, a task record, a workflow state. */
import type { Order, Server } from '../../lambdas/domain/marketplace-types';
import type { TaskRecord } from '../../lambdas/domain/task';
import type { WorkflowState } from '../../lambdas/domain/create-order/workflow-state';

export const NATIVE = 'NATIVE-Blockchain';

/** A free RTX 4090 server paying in the native coin; `patch` overrides any field. */
export const aServer = (id: number, patch: Partial<Server> = {}): Server => ({
  id,
  owner: 1,
  mrl: 24,
  rented: false,
  price: {
    on_demand: { [NATIVE]: 10 },
    spot: { [NATIVE]: 5 },
    usd_per_hour: { on_demand: { [NATIVE]: 1.2 }, spot: 0.6 },
  },
  specs: { gpu: '1x NVIDIA RTX 4090', cpu: 'x', ram: 64, disk: '1TB' },
  gpu_array: ['NVIDIA RTX 4090'],
  reliability: 0.99,
  rating: { avg: 5, cnt: 3 },
  allowed_coins: [NATIVE],
  ...patch,
});

/** A `my_orders` element: a running on-demand order on server 1000 + id; `fields` overrides any field. */
export const anOrder = (orderId: number, fields: Partial<Order> = {}): Order => ({
  order_id: orderId,
  renting_server: 1000 + orderId,
  type: 'on-demand',
  status: 'running',
  currency: 'bitcoin',
  price: 1,
  created: 0,
  started: 0,
  connection: { ssh: `ssh root@h -p ${orderId}` },
  ...fields,
});

/** An order as the create-order workflow places it: spot, on `rentingServer`, created (and started) at `created`. */
export const aPlacedOrder = (
  orderId: number,
  rentingServer: number,
  created: number,
  status = 'creating_order',
): Order =>
  anOrder(orderId, {
    renting_server: rentingServer,
    type: 'spot',
    status,
    currency: NATIVE,
    created,
    started: created,
    connection: { ssh: `ssh -p 2222 root@host${orderId}` },
  });

/** A queued create-order record as ingress writes it; `patch` overrides any field. */
export const aTaskRecord = (taskId = 'task-1', patch: Partial<TaskRecord> = {}): TaskRecord => ({
  task_id: taskId,
  kind: 'create-order',
  state: 'queued',
  request: {},
  origin: { source: 'webhook' },
  created_at: new Date(0).toISOString(),
  updated_at: new Date(0).toISOString(),
  ...patch,
});

/** The create-order workflow's state at its start; `patch` overrides any field. */
export const aState = (patch: Partial<WorkflowState> = {}): WorkflowState => ({
  task_id: 'task-1',
  request: { gpu_type: '4090', image: 'img', currency: NATIVE, ports: { '22': 'tcp' }, use_spot: true },
  origin: { source: 'webhook' },
  timing: { poll_interval_seconds: 5, ready_timeout_seconds: 120, soft_deadline: 1_000_000_000 },
  ...patch,
});
