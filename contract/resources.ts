/**
 * The one place that names the relay's data resources. The CDK constructs and the local runtime
 * (`npm start`) both build their table and queues from these definitions, so they cannot drift.
 */
import { HARD_TIME_LIMIT_SECONDS } from './limits';

/** Single-table design: every item is keyed by `pk` (e.g. TASK#<id>, RATE#<ip>, QUOTA#orders). */
export const RELAY_TABLE = {
  logicalName: 'relay',
  partitionKey: 'pk',
  /** Epoch seconds; DynamoDB TTL removes expired windows, claims, caches and idempotency keys. */
  ttlAttribute: 'ttl',
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
  maxReceiveCount: 5,
  retentionSeconds: 4 * 24 * 3600,
} as const;

export const DEAD_LETTER_QUEUE = {
  logicalName: 'jobs-dlq',
  retentionSeconds: 14 * 24 * 3600,
} as const;

/** Table key prefixes. */
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
} as const;
