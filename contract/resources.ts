/**
 * The one place that names the relay's data resources. The CDK constructs and the local runtime
 * (`npm start`) both build their table and queues from these definitions, so they cannot drift.
 */
import { HARD_TIME_LIMIT_SECONDS } from './limits';
import { MAX_RECEIVE_COUNT } from './retry-policy';

/** Single-table design: every item is keyed by `pk` (e.g. TASK#<id>, RATE#<ip>, QUOTA#orders). */
export const RELAY_TABLE = {
  logicalName: 'relay',
  partitionKey: 'pk',
  /** Epoch seconds; DynamoDB TTL removes expired windows, claims, caches and idempotency keys. */
  ttlAttribute: 'ttl',
  /**
   * The waiting queue's index (issue 29 §5): every standing order waiting for a server (`WAIT#<task>`
   * items) under one index partition, sorted by GPU type and then arrival, so one Query reads the
   * queue (a sweep) or one GPU type's part of it (a queue position). Projects every attribute.
   */
  waitingIndex: {
    name: 'waiting',
    partitionKey: 'wq',
    sortKey: 'wq_order',
    /** The one index partition value (an IAM LeadingKeys value of the index's Query grant). */
    partition: 'WAITQ#all',
  },
} as const;

/** Worker Lambda timeout: the hard limit; the soft limit is enforced inside the job. */
export const WORKER_TIMEOUT_SECONDS = HARD_TIME_LIMIT_SECONDS;

/**
 * Fleet-watch Lambda timeout. A healthy sweep handles its limit of leases (about 2 s each: the 1 s
 * pacing slot of cancel_order plus deliveries and writes) in two thirds of it; past that the sweep
 * defers what is left rather than start a lease whose worst case would not fit (test/unit/time-budgets.test.ts).
 */
export const WATCH_TIMEOUT_SECONDS = 300;

export const JOB_QUEUE = {
  logicalName: 'jobs',
  /** At least 6x the worker timeout (Lambda's guidance for SQS event sources). */
  visibilityTimeoutSeconds: 6 * WORKER_TIMEOUT_SECONDS,
  /** Receives before SQS moves a message to the DLQ. The job itself gives up after 3 retries (4 receives). */
  maxReceiveCount: MAX_RECEIVE_COUNT,
  retentionSeconds: 4 * 24 * 3600,
} as const;

export const DEAD_LETTER_QUEUE = {
  logicalName: 'jobs-dlq',
  retentionSeconds: 14 * 24 * 3600,
} as const;

/**
 * Table key prefixes: one entry per item family. A new family also needs its line in
 * lib/constructs/table-access.ts `TABLE_ACCESS` (which functions read or write it: IAM grants are
 * limited to these keys with dynamodb:LeadingKeys); typecheck fails until it has one.
 */
export const keys = {
  task: (taskId: string) => `TASK#${taskId}`,
  rate: (address: string) => `RATE#${address}`,
  quota: () => 'QUOTA#orders',
  pacing: (keyId: string) => `PACE#${keyId}`,
  claim: (serverId: number) => `CLAIM#${serverId}`,
  cache: (name: string) => `CACHE#${name}`,
  idempotency: (key: string) => `IDEM#${key}`,
  /**
   * A signed, timestamped webhook request already accepted (sha256 of route, timestamp and signature),
   * bound to its task until its timestamp leaves the replay window: one signed request, one task.
   */
  signedRequest: (hash: string) => `SIGNED#${hash}`,
  /** An order the relay placed (task, callback, spot) and its lease, if any. */
  lease: (orderId: number) => `LEASE#${orderId}`,
  /** A 15-minute bucket of lease ends, named by its start in UTC minutes, for people reading the table. */
  leaseDue: (bucketStart: number) => `LEASE_DUE#${new Date(bucketStart * 1000).toISOString().slice(0, 16)}`,
  leaseDueCursor: () => 'LEASE_DUE#cursor',
  watch: () => 'WATCH#orders',
  leaseEvent: (eventId: string) => `LEASE_EVENT#${eventId}`,
  spotDecrease: (orderId: number) => `SPOT_DECREASE#${orderId}`,
  /** One item: every open placement intent (a create_order whose order no task has kept yet). */
  placementIntents: () => 'INTENT#open',
  /** Who keeps an order the relay placed: `task:<id>`, or `orphan` once the fleet watch cancelled it. */
  orderOwner: (orderId: number) => `OWNER#${orderId}`,
  /** A standing order waiting for a server (issues 23, 29): one item per task, in the waiting index. */
  waiting: (taskId: string) => `WAIT#${taskId}`,
  /**
   * The waiting queue's slots (issues 29 §5, 38 §1): one item, `total`, with one attribute per waiting
   * task, the relay's count and one count per key, so both caps are one conditional write; the fleet
   * watch recounts them from the queue every sweep. (`key:<name>` items of issue 29 are no longer written.)
   */
  waitingSlots: (scope: string) => `WAITSLOTS#${scope}`,
  /** One item: every outbid replacement under way (issue 23), one attribute per replacement round. */
  replacements: () => 'REPLACE#pending',
  /** One item: every caller key (issue 24: name, scopes, limits, the encrypted secret, revocation). */
  callerKeys: () => 'KEYS#all',
  /** A caller key's SSH public key (issue 37 §2): one item per key, so KEYS#all stays small. */
  keySshKey: (keyName: string) => `KEYSSH#${keyName}`,
  /** A caller key's rolling hour of orders (its `orders_per_hour`), beside the account-wide QUOTA#orders. */
  keyQuota: (keyName: string) => `KEYQUOTA#${keyName}`,
  /** Spending budgets (issue 24): one item per UTC day (`YYYY-MM-DD`) with its reserved and settled totals, relay-wide and per key. */
  spendDay: (day: string) => `SPEND#${day}`,
  /** A create-order task's reservation: key, server, USD per hour, the reserved segments, readiness and, once settled, the cost. */
  spendReservation: (taskId: string) => `SPENDRES#${taskId}`,
  /** The ledger: one item per settled order, kept 400 days. */
  spendLedger: (orderId: number) => `LEDGER#${orderId}`,
  /** The relay's record of a host (issue 31 §2): its outcomes, time to ready, avoidance; kept 30 days after the last. */
  host: (serverId: number) => `HOST#${serverId}`,
  /** One item: every host with a record and its avoidance (one attribute per host), read by every search. */
  hostIndex: () => 'HOSTS#index',
} as const;

/** An item family of the relay table (a `keys` entry). */
export type KeyFamily = keyof typeof keys;

/**
 * The partition-key values of a family as an IAM `StringLike` pattern (dynamodb:LeadingKeys): the one
 * key of a family without parameters (`QUOTA#orders`), else its prefix up to `#` followed by `*`
 * (`TASK#*`). Prefixes end in `#`, so `LEASE#*` matches no `LEASE_DUE#` key.
 */
export const keyPattern = (family: KeyFamily): string => {
  const key = keys[family] as (arg?: never) => string;
  if (key.length === 0) return key();
  const sample = key(0 as never);
  return `${sample.slice(0, sample.indexOf('#') + 1)}*`;
};
