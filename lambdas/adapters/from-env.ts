/**
 * Adapter factories from the parsed environment: handlers call these once at cold start and get
 * ports back, so they never name a technology. Clients are the shared, traced singletons.
 */
import { DynamoDbAvoidedHosts } from './dynamodb/dynamodb-avoided-hosts';
import { DynamoDbHostRecords } from './dynamodb/dynamodb-host-records';
import { documentClient } from './aws-clients';
import { sqsClient } from './sqs-client';
import { sfnClient } from './sfn-client';
import { DynamoDbCallerKeys } from './dynamodb/dynamodb-caller-keys';
import { DynamoDbIdempotencyStore } from './dynamodb/dynamodb-idempotency-store';
import { DynamoDbLeaseBook } from './dynamodb/dynamodb-lease-book';
import { DynamoDbPlacementIntents } from './dynamodb/dynamodb-placement-intents';
import { DynamoDbServerClaims } from './dynamodb/dynamodb-server-claims';
import { DynamoDbSlidingWindow } from './dynamodb/dynamodb-sliding-window';
import { DynamoDbSpendStore } from './dynamodb/dynamodb-spend-store';
import { DynamoDbTaskRepository } from './dynamodb/dynamodb-task-repository';
import { DynamoDbKeySshKeys } from './dynamodb/dynamodb-key-ssh-keys';
import type { KeySshKeys } from '../domain/access/order-access';
import { lazyPort } from './lazy-port';
import type { RelayEnv } from './env';
import { SfnWorkflowStarter } from './sfn-workflow-starter';
import { SqsJobQueue } from './sqs-job-queue';
import type { CallerKeyStore, KeySealer } from '../domain/teams/caller-keys';
import type { LeaseBook } from '../domain/leases/lease-ports';
import type { MarketplaceFees } from '../domain/teams/spend-budget';
import { keys } from '../../contract/resources';
import type {
  IdempotencyStore,
  JobQueue,
  PlacementIntents,
  ServerClaims,
  SlidingWindow,
  TaskRepository,
  WaitingTasks,
  WorkflowStarter,
} from '../domain/ports';

/**
 * Task records. `envSealer` (lambdas/adapters/caller-key-sealer.ts `replacementEnvSealerFromEnv`):
 * what seals the replacement env a replaceable task keeps (issue 29 §6), for the functions that keep
 * or read it (the create-order routes, the fleet watch); without it none is kept or read.
 */
export const taskRepositoryFromEnv = (env: RelayEnv, envSealer?: KeySealer, accessSealer?: KeySealer): TaskRepository =>
  new DynamoDbTaskRepository(documentClient(), env.TABLE_NAME, envSealer, accessSealer);

/** The SSH public key stored per caller key (issue 37 §2). */
export const keySshKeysFromEnv = (env: RelayEnv): KeySshKeys =>
  new DynamoDbKeySshKeys(documentClient(), env.TABLE_NAME);

export const slidingWindowFromEnv = (env: RelayEnv): SlidingWindow =>
  new DynamoDbSlidingWindow(documentClient(), env.TABLE_NAME);

export const placementIntentsFromEnv = (env: RelayEnv): PlacementIntents =>
  new DynamoDbPlacementIntents(documentClient(), env.TABLE_NAME);

/**
 * The standing-order queue (issue 23), loaded on first use (lazyPort; issue 40 §1): a create-order
 * admits a standing order only with `wait_seconds`, so the routes and workflow tasks that may do so do
 * not parse the queue's adapter at every cold start. (The fleet watch, which reads the queue at every
 * sweep, builds DynamoDbWaitingTasks itself.)
 */
export const waitingTasksFromEnv = (env: RelayEnv): WaitingTasks =>
  lazyPort<WaitingTasks, 'add' | 'admit' | 'get' | 'list' | 'remove' | 'recount'>(async () => {
    const { DynamoDbWaitingTasks } = await import('./dynamodb/dynamodb-waiting-tasks');
    return new DynamoDbWaitingTasks(documentClient(), env.TABLE_NAME);
  }, ['add', 'admit', 'get', 'list', 'remove', 'recount']);

export const serverClaimsFromEnv = (env: RelayEnv): ServerClaims =>
  new DynamoDbServerClaims(documentClient(), env.TABLE_NAME);

/** Caller keys (issue 24), cached per instance for CALLER_KEY_CACHE_SECONDS. */
export const callerKeyStoreFromEnv = (env: RelayEnv): CallerKeyStore =>
  new DynamoDbCallerKeys(documentClient(), env.TABLE_NAME, env.CALLER_KEY_CACHE_SECONDS);

/** Spending budgets and the ledger (issue 24). */
export const spendStoreFromEnv = (env: RelayEnv): DynamoDbSpendStore =>
  new DynamoDbSpendStore(documentClient(), env.TABLE_NAME);

/** The relay's host records (issue 31 §2), with the avoidance settings. */
export const hostRecordsFromEnv = (env: RelayEnv): DynamoDbHostRecords =>
  new DynamoDbHostRecords(documentClient(), env.TABLE_NAME, {
    afterFailures: env.HOST_AVOID_AFTER_FAILURES,
    hours: env.HOST_AVOID_HOURS,
  });

/** Only the avoided hosts (issue 31 §2): what every search reads, without the rest of the store in its bundle. */
export const avoidedHostsFromEnv = (env: RelayEnv): DynamoDbAvoidedHosts =>
  new DynamoDbAvoidedHosts(documentClient(), env.TABLE_NAME);

/** The marketplace's fees as configured (RENTER_FEE_PERCENT, ORDER_CREATION_FEE_USD): reserved and settled (issue 29 §3). */
export const feesFromEnv = (env: RelayEnv): MarketplaceFees => ({
  renter_fee_percent: env.RENTER_FEE_PERCENT,
  creation_fee_usd: env.ORDER_CREATION_FEE_USD,
});

export const idempotencyStoreFromEnv = (env: RelayEnv): IdempotencyStore =>
  new DynamoDbIdempotencyStore(documentClient(), env.TABLE_NAME);

/** Signed timestamped requests already accepted (`SIGNED#` items): a repeat gets the first task id. */
export const signedRequestStoreFromEnv = (env: RelayEnv): IdempotencyStore =>
  new DynamoDbIdempotencyStore(documentClient(), env.TABLE_NAME, keys.signedRequest);

/**
 * The lease book (issue 14) in the relay table: tracking, extending, spot decrease claims. The fleet
 * watch's sweep constructs DynamoDbLeaseStore itself; this keeps its methods out of other bundles.
 */
export const leaseBookFromEnv = (env: RelayEnv): LeaseBook => new DynamoDbLeaseBook(documentClient(), env.TABLE_NAME);

/** Throws when STATE_MACHINE_ARN is unset: a function that starts workflows cannot run without it. */
export const workflowStarterFromEnv = (env: RelayEnv): WorkflowStarter => {
  if (!env.STATE_MACHINE_ARN) throw new Error('STATE_MACHINE_ARN is not set: cannot start the create-order workflow');
  return new SfnWorkflowStarter(sfnClient(), env.STATE_MACHINE_ARN);
};

/** Throws when JOB_QUEUE_URL is unset: a function that queues jobs cannot run without it. */
export const jobQueueFromEnv = (env: RelayEnv): JobQueue => {
  if (!env.JOB_QUEUE_URL) throw new Error('JOB_QUEUE_URL is not set: cannot queue jobs');
  return new SqsJobQueue(sqsClient(), env.JOB_QUEUE_URL);
};

/** Secrets are read per delivery through the cached secrets adapter, so a rotation is picked up. */
