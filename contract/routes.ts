import type { Scope } from './scopes';

/**
 * Every relay route, in one table: the CDK HTTP API, the local runtime and the OpenAPI document
 * are all built from it, so a route cannot exist in one and be missing from another.
 */
export interface RouteDefinition {
  readonly method: 'GET' | 'POST' | 'PUT' | 'DELETE';
  /** API Gateway path syntax, e.g. `/webhook/tasks/{task_id}`. */
  readonly path: string;
  /** Repo-relative handler file; it exports `handler`. */
  readonly entry: string;
  /** Stable construct id of the route's function. */
  readonly id: string;
  readonly signed: boolean;
  readonly rateLimited: boolean;
  /** What the function may do besides reading the table and secrets. */
  readonly permissions: readonly ('startExecution' | 'sendMessage' | 'writeTasks' | 'marketplace')[];
}

/** The handler file of an API route: `lambdas/handlers/api/<name>.ts`. */
const apiEntry = (name: string): string => `lambdas/handlers/api/${name}.ts`;

export const ROUTES: readonly RouteDefinition[] = [
  {
    method: 'POST',
    path: '/webhook/create-order',
    entry: apiEntry('create-order'),
    id: 'CreateOrder',
    signed: true,
    rateLimited: true,
    permissions: ['startExecution', 'writeTasks'],
  },
  {
    method: 'POST',
    path: '/webhook/cancel-order',
    entry: apiEntry('cancel-order'),
    id: 'CancelOrder',
    signed: true,
    rateLimited: true,
    permissions: ['sendMessage', 'writeTasks'],
  },
  {
    method: 'POST',
    path: '/webhook/extend-order',
    entry: apiEntry('extend-order'),
    id: 'ExtendOrder',
    signed: true,
    rateLimited: true,
    permissions: ['sendMessage', 'writeTasks'],
  },
  {
    method: 'POST',
    path: '/webhook/set-spot-price',
    entry: apiEntry('set-spot-price'),
    id: 'SetSpotPrice',
    signed: true,
    rateLimited: true,
    permissions: ['sendMessage', 'writeTasks'],
  },
  {
    method: 'POST',
    path: '/webhook/cancel-task',
    entry: apiEntry('cancel-task'),
    id: 'CancelTask',
    signed: true,
    rateLimited: true,
    permissions: ['sendMessage', 'writeTasks'],
  },
  {
    method: 'POST',
    path: '/webhook/price-alert',
    entry: apiEntry('price-alert'),
    id: 'PriceAlert',
    signed: true,
    rateLimited: true,
    permissions: ['sendMessage', 'writeTasks'],
  },
  {
    method: 'POST',
    path: '/webhook/status',
    entry: apiEntry('status'),
    id: 'Status',
    signed: true,
    rateLimited: true,
    permissions: ['sendMessage', 'writeTasks'],
  },
  {
    method: 'GET',
    path: '/webhook/tasks/{task_id}',
    entry: apiEntry('get-task'),
    id: 'GetTask',
    signed: true,
    rateLimited: true,
    permissions: [],
  },
  {
    method: 'GET',
    path: '/webhook/spend',
    entry: apiEntry('spend'),
    id: 'Spend',
    signed: true,
    rateLimited: true,
    permissions: [],
  },
  {
    method: 'GET',
    path: '/webhook/hosts',
    entry: apiEntry('hosts'),
    id: 'Hosts',
    signed: true,
    rateLimited: true,
    permissions: [],
  },
  {
    method: 'GET',
    path: '/webhook/marketplace',
    entry: apiEntry('marketplace-summary'),
    id: 'MarketplaceSummary',
    signed: false,
    rateLimited: true,
    permissions: ['marketplace'],
  },
  {
    method: 'POST',
    path: '/slack/command',
    entry: apiEntry('slack-command'),
    id: 'SlackCommand',
    signed: false,
    rateLimited: true,
    permissions: ['startExecution', 'sendMessage', 'writeTasks'],
  },
  {
    method: 'POST',
    path: '/admin/keys',
    entry: apiEntry('admin-keys-create'),
    id: 'AdminKeysCreate',
    signed: true,
    rateLimited: true,
    permissions: [],
  },
  {
    method: 'GET',
    path: '/admin/keys',
    entry: apiEntry('admin-keys-list'),
    id: 'AdminKeysList',
    signed: true,
    rateLimited: true,
    permissions: [],
  },
  {
    method: 'POST',
    path: '/admin/keys/{name}/revoke',
    entry: apiEntry('admin-keys-revoke'),
    id: 'AdminKeysRevoke',
    signed: true,
    rateLimited: true,
    permissions: [],
  },
  {
    method: 'POST',
    path: '/admin/hosts/{server_id}/avoid',
    entry: apiEntry('admin-hosts-avoid'),
    id: 'AdminHostsAvoid',
    signed: true,
    rateLimited: true,
    permissions: [],
  },
  {
    method: 'POST',
    path: '/admin/hosts/{server_id}/clear',
    entry: apiEntry('admin-hosts-clear'),
    id: 'AdminHostsClear',
    signed: true,
    rateLimited: true,
    permissions: [],
  },
  {
    method: 'PUT',
    path: '/admin/keys/{name}/ssh-key',
    entry: apiEntry('admin-keys-ssh-key'),
    id: 'AdminKeysSshKey',
    signed: true,
    rateLimited: true,
    permissions: [],
  },
  {
    method: 'DELETE',
    path: '/admin/keys/{name}',
    entry: apiEntry('admin-keys-delete'),
    id: 'AdminKeysDelete',
    signed: true,
    rateLimited: true,
    permissions: [],
  },
  {
    method: 'GET',
    path: '/health',
    entry: apiEntry('health'),
    id: 'Health',
    signed: false,
    rateLimited: false,
    permissions: [],
  },
  {
    method: 'GET',
    path: '/openapi.json',
    entry: apiEntry('openapi'),
    id: 'OpenApi',
    signed: false,
    rateLimited: false,
    permissions: [],
  },
];

/** The scope each signed route requires (a key without it: 403 `key <name> may not <scope>`). */
export const ROUTE_SCOPES: Readonly<Record<string, Scope>> = {
  CreateOrder: 'order',
  PriceAlert: 'order',
  ExtendOrder: 'order',
  SetSpotPrice: 'order',
  CancelOrder: 'cancel',
  CancelTask: 'cancel',
  Status: 'read',
  GetTask: 'read',
  Spend: 'read',
  Hosts: 'read',
  AdminKeysCreate: 'admin',
  AdminKeysList: 'admin',
  AdminKeysRevoke: 'admin',
  AdminKeysDelete: 'admin',
  AdminKeysSshKey: 'admin',
  AdminHostsAvoid: 'admin',
  AdminHostsClear: 'admin',
};

/** Create-order workflow steps: state name → handler. The state machine and the local runtime share it. */
export const WORKFLOW_TASKS = {
  FindServer: 'lambdas/handlers/workflow/find-server.ts',
  ReserveQuota: 'lambdas/handlers/workflow/reserve-quota.ts',
  PlaceOrder: 'lambdas/handlers/workflow/place-order.ts',
  CheckOrder: 'lambdas/handlers/workflow/check-order.ts',
  CancelOrder: 'lambdas/handlers/workflow/cancel-order.ts',
  ReportResult: 'lambdas/handlers/workflow/report-result.ts',
} as const;
export type WorkflowTaskName = keyof typeof WORKFLOW_TASKS;

/** Invoked by the EventBridge rule on executions that end TIMED_OUT, FAILED or ABORTED. */
export const EXECUTION_ENDED_ENTRY = 'lambdas/handlers/workflow/execution-ended.ts';
/** The SQS job worker. */
export const JOB_WORKER_ENTRY = 'lambdas/handlers/worker/job-worker.ts';
/** The fleet watch (issue 14): one sweep per EventBridge schedule tick (locally, per timer tick). */
export const FLEET_WATCH_ENTRY = 'lambdas/handlers/watch/fleet-watch.ts';
