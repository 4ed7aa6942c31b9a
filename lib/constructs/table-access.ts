/**
 * Which relay function may read or write which items of the relay table (issue 21 item 5). Every
 * DynamoDB grant is limited with `dynamodb:LeadingKeys` to the partition keys of the item families
 * (contract/resources.ts `keys`) the function's code touches, so the public summary route cannot
 * write a task and get-task can only read one.
 *
 * Adding an item family is one line in TABLE_ACCESS below (typecheck fails until the family has
 * one). Derive it from the code: which adapter builds the family's keys (grep `keys.<family>` in
 * lambdas/) and which handlers build that adapter (their deps / *FromEnv factories). The local runtime
 * enforces these grants (local/iam-checks.ts; IAM_CHECKS=enforce in tests), so a function missing
 * here fails an e2e test with an AccessDeniedException naming the action and the key;
 * test/infra/table-access.test.ts checks the rest (every family granted, no key built outside `keys`).
 */
import { Grant, type IGrantable } from 'aws-cdk-lib/aws-iam';
import type * as dynamodb from 'aws-cdk-lib/aws-dynamodb';
import { keyPattern, RELAY_TABLE, type KeyFamily } from '../../contract/resources';
import { ROUTES, WORKFLOW_TASKS, type RouteDefinition, type WorkflowTaskName } from '../../contract/routes';

/** A relay function, named as the monitoring construct names it: `Api<route id>`, `Workflow<step>`, `JobWorker`, `FleetWatch`. */
export type TableUser = `Api${string}` | `Workflow${WorkflowTaskName | 'ExecutionEnded'}` | 'JobWorker' | 'FleetWatch';

export const apiUser = (route: RouteDefinition): TableUser => `Api${route.id}`;
const workflowUser = (step: WorkflowTaskName | 'ExecutionEnded'): TableUser => `Workflow${step}`;

/** Single-item reads. BatchGetItem reads the same items by key (LeadingKeys covers each key of a batch). */
export const TABLE_READ_ACTIONS = ['dynamodb:GetItem', 'dynamodb:BatchGetItem'] as const;
/** Single-item writes (no Scan, Query or batch writes: no function can read or wipe the table in bulk). */
export const TABLE_WRITE_ACTIONS = ['dynamodb:PutItem', 'dynamodb:UpdateItem', 'dynamodb:DeleteItem'] as const;
/** The one bulk read: Query on the waiting index (issue 29 §5), never on the table itself. */
export const INDEX_READ_ACTIONS = ['dynamodb:Query'] as const;

const routesWhere = (test: (route: RouteDefinition) => boolean): TableUser[] => ROUTES.filter(test).map(apiUser);

/** Routes behind the per-address rate limit (lambdas/middleware/rate-limit.ts: RATE# windows). */
const RATE_LIMITED = routesWhere((route) => route.rateLimited);
/** Routes that start the create-order workflow: they accept standing orders, and admit them to the waiting queue (issue 29 §5). */
const STANDING_ROUTES = routesWhere((route) => route.permissions.includes('startExecution'));
/** Routes that accept tasks (acceptDepsFromEnv: task repository, idempotency store). */
const TASK_ROUTES = routesWhere((route) => route.permissions.includes('writeTasks'));
/** Functions that build the marketplace client (marketplaceFromEnv: DynamoDB pacing gate and read cache). */
const MARKETPLACE_USERS: TableUser[] = [
  ...routesWhere((route) => route.permissions.includes('marketplace')),
  workflowUser('FindServer'),
  workflowUser('PlaceOrder'),
  workflowUser('CheckOrder'),
  workflowUser('CancelOrder'),
  workflowUser('ExecutionEnded'),
  'JobWorker',
  'FleetWatch',
];
/** Workflow steps that build the task repository (handlers/workflow/deps.ts, notifier-deps.ts). */
const TASK_STEPS: TableUser[] = [
  workflowUser('FindServer'),
  workflowUser('ReserveQuota'),
  workflowUser('PlaceOrder'),
  workflowUser('CancelOrder'),
  workflowUser('ReportResult'),
  workflowUser('ExecutionEnded'),
];
/** Functions that build the server claims (FindServer claims; ReserveQuota, PlaceOrder, ReportResult, ExecutionEnded release). */
const CLAIM_USERS: TableUser[] = [
  workflowUser('FindServer'),
  workflowUser('ReserveQuota'),
  workflowUser('PlaceOrder'),
  workflowUser('ReportResult'),
  workflowUser('ExecutionEnded'),
];
/**
 * Functions that build the lease book (leaseBookFromEnv: track, extend, spot-decrease claims, which
 * also write the due buckets, their cursor and the watch list) or the fleet watch's lease store.
 */
const LEASE_USERS: TableUser[] = [workflowUser('ReportResult'), 'JobWorker', 'FleetWatch'];

/** Functions that reserve or settle spending (the spend store: lambdas/adapters/dynamodb/dynamodb-spend-store.ts). */
const SPEND_USERS: TableUser[] = [
  workflowUser('ReserveQuota'),
  workflowUser('ReportResult'),
  workflowUser('ExecutionEnded'),
  'JobWorker',
  'FleetWatch',
];

export interface FamilyAccess {
  /** Functions that may read, put, update and delete the family's items. */
  readonly write?: readonly TableUser[];
  /** Functions that may only read them. */
  readonly read?: readonly TableUser[];
}

/** The grant table: one line per item family (contract/resources.ts `keys`). */
export const TABLE_ACCESS: Readonly<Record<KeyFamily, FamilyAccess>> = {
  // FleetWatch reads the task behind an order nobody kept (its callback_url) and finishes a standing order whose wait ended.
  // CheckOrder reads a task's sealed access secrets (issue 37: the caller's password logs in).
  task: {
    write: [...TASK_ROUTES, ...TASK_STEPS, 'JobWorker', 'FleetWatch'],
    read: [apiUser(ROUTES.find((r) => r.id === 'GetTask')!), workflowUser('CheckOrder')],
  },
  rate: { write: RATE_LIMITED },
  quota: { write: [workflowUser('ReserveQuota')] },
  pacing: { write: MARKETPLACE_USERS },
  claim: { write: [...CLAIM_USERS, 'FleetWatch'] },
  cache: { write: MARKETPLACE_USERS },
  idempotency: { write: TASK_ROUTES },
  // One task per signed request (issue 21 item 2), one route per signature (issue 29): every signed route claims.
  signedRequest: { write: routesWhere((route) => route.signed) },
  lease: { write: LEASE_USERS },
  leaseDue: { write: LEASE_USERS },
  leaseDueCursor: { write: LEASE_USERS },
  watch: { write: LEASE_USERS },
  leaseEvent: { write: ['FleetWatch'] },
  spotDecrease: { write: LEASE_USERS },
  // PlaceOrder opens and closes intents; the fleet watch lists and closes them (domain/leases/orphan-orders.ts).
  placementIntents: { write: [workflowUser('PlaceOrder'), 'FleetWatch'] },
  // A task keeps an order (PlaceOrder, CancelOrder's reconcile) or the watch claims it as an orphan.
  orderOwner: { write: [workflowUser('PlaceOrder'), workflowUser('CancelOrder'), 'FleetWatch'] },
  // Standing orders (issues 23, 29): the create-order routes admit a task (its slots under the caps, a
  // pending entry), FindServer queues it (ReserveQuota again when the cap or a budget refuses it), the
  // fleet watch serves, expires or (revoked key) fails it, the job worker's cancel-task removes it;
  // get-task reads its place in the queue. The slots change with the entries, by the same functions.
  waiting: {
    write: [...STANDING_ROUTES, workflowUser('FindServer'), workflowUser('ReserveQuota'), 'FleetWatch', 'JobWorker'],
    read: [apiUser(ROUTES.find((r) => r.id === 'GetTask')!)],
  },
  waitingSlots: {
    write: [...STANDING_ROUTES, workflowUser('FindServer'), workflowUser('ReserveQuota'), 'FleetWatch', 'JobWorker'],
  },
  // Outbid replacements under way (issue 23): the fleet watch starts and settles them.
  replacements: { write: ['FleetWatch'] },
  // Caller keys (issue 24): every signed route looks a key up, /slack/command maps its user to one
  // (found missing by the local IAM checks, issue 30); the admin routes add, revoke and delete. The fleet
  // watch reads them to stop a revoked key's waiting tasks and replacement rounds (issue 29 §4).
  callerKeys: {
    write: ['ApiAdminKeysCreate', 'ApiAdminKeysRevoke', 'ApiAdminKeysDelete'],
    read: [...routesWhere((route) => route.signed), 'ApiSlackCommand', 'FleetWatch'],
  },
  // A caller key's SSH public key (issue 37 §2): the admin routes set and drop it, PlaceOrder sends it.
  keySshKey: {
    write: ['ApiAdminKeysCreate', 'ApiAdminKeysSshKey', 'ApiAdminKeysDelete'],
    read: [workflowUser('PlaceOrder'), 'ApiAdminKeysList'],
  },
  keyQuota: { write: [workflowUser('ReserveQuota')] },
  // Budgets (issue 24): ReserveQuota reserves, the job worker's extend-order reserves more, ReportResult
  // and ExecutionEnded settle a failed task's, the fleet watch an ended order's; GET /webhook/spend reads the days.
  spendDay: { write: SPEND_USERS, read: ['ApiSpend'] },
  spendReservation: { write: SPEND_USERS },
  spendLedger: { write: [workflowUser('ReportResult'), workflowUser('ExecutionEnded'), 'FleetWatch'] },
  // Host records (issue 31 §2): ReportResult records a task's outcomes (record and index), the fleet watch
  // an outbid order's; FindServer and the fleet watch's standing-order sweep read the index for avoided
  // hosts; GET /webhook/hosts reads both; the operator's avoid and clear routes write both.
  host: {
    write: [workflowUser('ReportResult'), 'FleetWatch', 'ApiAdminHostsAvoid', 'ApiAdminHostsClear'],
    read: ['ApiHosts'],
  },
  hostIndex: {
    write: [workflowUser('ReportResult'), 'FleetWatch', 'ApiAdminHostsAvoid', 'ApiAdminHostsClear'],
    read: [workflowUser('FindServer'), 'ApiHosts'],
  },
};

/**
 * Who may Query the waiting index (issue 29 §5): the fleet watch (a sweep), FindServer (the tasks
 * ahead of a new standing order) and get-task (a queue position). Nobody may Query the table.
 */
export const WAITING_INDEX_READERS: readonly TableUser[] = [
  workflowUser('FindServer'),
  'FleetWatch',
  apiUser(ROUTES.find((r) => r.id === 'GetTask')!),
];

/** Every function name the table may name (for the tests: a typo would grant nobody). */
export const TABLE_USERS: readonly TableUser[] = [
  ...ROUTES.map(apiUser),
  ...[...(Object.keys(WORKFLOW_TASKS) as WorkflowTaskName[]), 'ExecutionEnded' as const].map(workflowUser),
  'JobWorker',
  'FleetWatch',
];

/**
 * The functions that read by key in batches (BatchGetItem): the worker's status (leases of the listed
 * orders), the fleet watch's due index and GET /webhook/spend's days. Every other function is granted
 * the single-item actions only (measured: no other function called BatchGetItem in any e2e run,
 * `npm run iam:report`, issue 30). GET /admin/keys reads the keys' SSH keys in batches (issue 37 §2).
 */
export const BATCH_READERS: readonly TableUser[] = [
  'JobWorker',
  'FleetWatch',
  'ApiSpend',
  'ApiHosts',
  'ApiAdminKeysList',
];

/** The LeadingKeys patterns `user` may write and those it may only read (sorted, without duplicates). */
export const tableAccessOf = (user: TableUser): { write: string[]; read: string[] } => {
  const write = new Set<string>();
  const read = new Set<string>();
  for (const [family, access] of Object.entries(TABLE_ACCESS) as [KeyFamily, FamilyAccess][]) {
    if (access.write?.includes(user)) write.add(keyPattern(family));
    else if (access.read?.includes(user)) read.add(keyPattern(family));
  }
  for (const pattern of write) read.delete(pattern);
  return { write: [...write].sort(), read: [...read].sort() };
};

/**
 * Grants `grantee` (the function `user`) item access to `table` limited to its families: one
 * statement for the families it writes, one for those it only reads. Nothing when it has none.
 */
export const grantTableAccess = (table: dynamodb.ITable, grantee: IGrantable, user: TableUser): void => {
  const { write, read } = tableAccessOf(user);
  const grant = (all: readonly string[], patterns: string[]) => {
    if (patterns.length === 0) return;
    const actions = BATCH_READERS.includes(user) ? all : all.filter((action) => action !== 'dynamodb:BatchGetItem');
    Grant.addToPrincipal({
      grantee,
      actions: [...actions],
      resourceArns: [table.tableArn],
      // ForAllValues: every partition key the request names (one, or each of a BatchGetItem) must match.
      conditions: { 'ForAllValues:StringLike': { 'dynamodb:LeadingKeys': patterns } },
    });
  };
  grant([...TABLE_READ_ACTIONS, ...TABLE_WRITE_ACTIONS], write);
  grant(TABLE_READ_ACTIONS, read);
  if (WAITING_INDEX_READERS.includes(user))
    Grant.addToPrincipal({
      grantee,
      actions: [...INDEX_READ_ACTIONS],
      resourceArns: [`${table.tableArn}/index/${RELAY_TABLE.waitingIndex.name}`],
      // The index's one partition: a Query names it as its partition key value.
      conditions: { 'ForAllValues:StringLike': { 'dynamodb:LeadingKeys': [RELAY_TABLE.waitingIndex.partition] } },
    });
};
