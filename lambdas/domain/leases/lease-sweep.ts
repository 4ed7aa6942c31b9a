/**
 * The lease sweep's rule (issue 14): at `now`, which leases get a warning and which expired. The
 * fleet watch runs it each sweep (sweepFleet, fleet-watch.ts) over the due leases the store reads
 * (LeaseStore.dueBefore, adapters/dynamodb/dynamodb-lease-store.ts), then warns and cancels through the
 * store's claims, so overlapping sweeps act once. Pure: time arrives as `now` (Unix seconds).
 */
import { DEFAULT_LEASE_WARNING_SECONDS, type Lease } from './lease';

export interface LeaseSweepPlan {
  /** Leases within the warning window that were not warned for their current end. */
  readonly warn: readonly Lease[];
  /** Leases whose end has passed: to cancel (or to close when the order is already gone). */
  readonly expire: readonly Lease[];
}

/**
 * Which leases get a warning and which expired, at `now`. Ended leases are skipped. A lease first
 * seen after its end is only expired (no late warning). Two sweeps may reach the same decision: the
 * store's conditional writes (claimWarning, claimCancel) let one of them act.
 */
export const planLeaseSweep = (
  leases: readonly Lease[],
  now: number,
  warningSeconds: number = DEFAULT_LEASE_WARNING_SECONDS,
): LeaseSweepPlan => {
  const warn: Lease[] = [];
  const expire: Lease[] = [];
  for (const lease of leases) {
    if (lease.ended) continue;
    if (lease.expires_at <= now) expire.push(lease);
    else if (lease.expires_at - warningSeconds <= now && lease.warned_for !== lease.expires_at) warn.push(lease);
  }
  return { warn, expire };
};
