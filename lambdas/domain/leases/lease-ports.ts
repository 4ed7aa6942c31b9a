/**
 * Ports of the fleet watch (issue 14): where leases, watch state and event claims live, and how a
 * lifecycle event leaves. Adapters implement them (lambdas/adapters/dynamodb/dynamodb-lease-book.ts, dynamodb-lease-store.ts).
 * Kept apart from ports.ts until the restructuring (issue 15) lands; merge them then.
 */
import type { Lease, LeaseEnd, OrderEvent, TrackedOrder, WatchedOrder, WatchEntry } from './lease';

/** Lease terms set at readiness. */
export interface LeaseTerms {
  readonly expires_at: number;
  readonly hours: number;
}

/** The outcome of claiming the right to lower an order's spot price. */
export type SpotDecreaseClaim = { readonly claimed: true } | { readonly claimed: false; readonly last_at: number };

/**
 * The per-order lease book: an order's record and lease, as the relay tracks and extends it, and its
 * spot decrease claims. What the job worker and the workflow need; the sweep's parts are LeaseStore.
 * Times are Unix seconds.
 */
export interface LeaseBook {
  /**
   * Registers an order the relay placed, at readiness: watched from now on with `status`, and with a
   * lease when `lease` is given. Idempotent: a second call (a retried step) changes nothing.
   */
  track(
    order: WatchedOrder,
    opts: { readonly now: number; readonly status: string; readonly lease?: LeaseTerms },
  ): Promise<void>;

  get(orderId: number): Promise<TrackedOrder | undefined>;
  /**
   * Records that the relay cancelled the order at `at` (Unix seconds, issue 38 §9), once: the first
   * moment stays. Nothing for an order the relay does not track.
   */
  cancelled(orderId: number, at: number): Promise<void>;
  getMany(orderIds: readonly number[]): Promise<ReadonlyMap<number, TrackedOrder>>;

  /**
   * Sets the lease end to `expiresAt` and adds `addHours` to its hours, if the stored end is still
   * `expectedEnd` (undefined: the order has no lease yet) and the lease is neither ended nor being
   * cancelled. An unknown order is created from `order` and watched with `status`. The due entry
   * moves with the end. Returns false when the condition failed (a concurrent change: read again).
   */
  extend(
    order: WatchedOrder,
    change: { readonly expectedEnd: number | undefined; readonly expiresAt: number; readonly addHours: number },
    opts: { readonly now: number; readonly status: string },
  ): Promise<boolean>;

  /**
   * Claims a spot price decrease on the order at `now` unless the previous claimed decrease is less
   * than `windowSeconds` old; then it answers when that one was.
   */
  claimSpotDecrease(orderId: number, now: number, windowSeconds: number): Promise<SpotDecreaseClaim>;
  /** Forgets the decrease claimed at `at` (the marketplace call failed, so it did not count). */
  releaseSpotDecrease(orderId: number, at: number): Promise<void>;

  /** Items read from the table since this store was made (cumulative; a sweep reports its delta). */
  itemsRead(): number;
}

/**
 * Leases, the watch list and event claims: the lease book plus what the fleet watch's sweep needs.
 * Every "claim" is a conditional write: of concurrent callers exactly one gets `true`, which is how
 * overlapping sweeps warn once, cancel once and send each event once. Times are Unix seconds.
 */
export interface LeaseStore extends LeaseBook {
  /**
   * Leases not ended with `expires_at ≤ before`, earliest first, at most `limit`. Reads O(due)
   * items, not O(all leases).
   */
  dueBefore(before: number, limit: number): Promise<readonly Lease[]>;

  /** True for the one caller that records a warning for this end of the lease. */
  claimWarning(orderId: number, expiresAt: number): Promise<boolean>;
  /**
   * True for the one caller that may cancel: the lease still ends at `expiresAt`, has not ended, and
   * nobody holds a claim younger than `staleAfterSeconds` (a crashed sweep's claim lapses).
   */
  claimCancel(orderId: number, expiresAt: number, now: number, staleAfterSeconds: number): Promise<boolean>;
  /** Gives a claim back after a failed cancel, so the next sweep retries. Only the claim made at `claimedAt`. */
  releaseCancel(orderId: number, claimedAt: number): Promise<void>;
  /**
   * Ends the lease (no more sweeping) and removes its due entry. With `expiresAt`, only if the lease
   * still ends then. Returns false when there was no running lease to end.
   */
  endLease(orderId: number, reason: LeaseEnd, now: number, expiresAt?: number): Promise<boolean>;

  /** Every watched order's last seen status. */
  watched(): Promise<ReadonlyMap<number, WatchEntry>>;
  /**
   * Replaces the watched status `prev` by `next` (undefined: stop watching) if it is still `prev`.
   * True for the one caller that made the change.
   */
  setStatus(orderId: number, prev: WatchEntry, next: WatchEntry | undefined, now: number): Promise<boolean>;

  /** True the first time `eventId` is claimed: the one caller that sends the event. */
  claimEvent(eventId: string, now: number): Promise<boolean>;
}

/**
 * Sends a lifecycle event to a callback URL, signed like a callback, with `X-Webhook-Id: eventId` on
 * every retry. Never throws; resolves whether it was delivered.
 */
export interface EventSender {
  send(url: string, eventId: string, event: OrderEvent): Promise<boolean>;
}
