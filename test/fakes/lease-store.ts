/** The LeaseStore port in memory, with the adapter's conditional semantics and a read counter. */
import type { Lease, LeaseEnd, TrackedOrder, WatchedOrder, WatchEntry } from '../../lambdas/domain/leases/lease';
import type { LeaseStore, LeaseTerms, SpotDecreaseClaim } from '../../lambdas/domain/leases/lease-ports';
import { tick } from './tick';

interface StoredOrder {
  order: WatchedOrder;
  expires_at?: number;
  hours?: number;
  warned_for?: number;
  cancel_claimed_at?: number;
  ended?: LeaseEnd;
}

const view = (s: StoredOrder): TrackedOrder => {
  if (s.expires_at === undefined || s.hours === undefined) return { ...s.order };
  const lease: Lease = {
    ...s.order,
    expires_at: s.expires_at,
    hours: s.hours,
    ...(s.warned_for !== undefined ? { warned_for: s.warned_for } : {}),
    ...(s.cancel_claimed_at !== undefined ? { cancel_claimed_at: s.cancel_claimed_at } : {}),
    ...(s.ended !== undefined ? { ended: s.ended } : {}),
  };
  return lease;
};

const sameEntry = (a: WatchEntry | undefined, b: WatchEntry): boolean =>
  a !== undefined && a.status === b.status && a.since === b.since && (a.spot === true) === (b.spot === true);

/** A LeaseStore with the adapter's conditional semantics, in memory. `itemsRead` counts records returned. */
export class FakeLeaseStore implements LeaseStore {
  public readonly orders = new Map<number, StoredOrder>();
  public readonly watch = new Map<number, WatchEntry>();
  public readonly events = new Set<string>();
  public readonly spotDecreases = new Map<number, number>();
  private reads = 0;

  public itemsRead(): number {
    return this.reads;
  }

  public async track(order: WatchedOrder, opts: { now: number; status: string; lease?: LeaseTerms }): Promise<void> {
    await tick();
    if (!this.orders.has(order.order_id))
      this.orders.set(order.order_id, { order: { ...order }, ...(opts.lease ? { ...opts.lease } : {}) });
    if (!this.watch.has(order.order_id))
      this.watch.set(order.order_id, { status: opts.status, since: opts.now, spot: order.spot === true });
  }

  public async get(orderId: number): Promise<TrackedOrder | undefined> {
    await tick();
    const s = this.orders.get(orderId);
    if (s) this.reads += 1;
    return s ? view(s) : undefined;
  }

  public async cancelled(orderId: number, at: number): Promise<void> {
    await tick();
    const s = this.orders.get(orderId);
    if (s && s.order.cancelled_at === undefined) s.order = { ...s.order, cancelled_at: at };
  }

  public async getMany(orderIds: readonly number[]): Promise<ReadonlyMap<number, TrackedOrder>> {
    await tick();
    const out = new Map<number, TrackedOrder>();
    for (const id of new Set(orderIds)) {
      const s = this.orders.get(id);
      if (s) {
        this.reads += 1;
        out.set(id, view(s));
      }
    }
    return out;
  }

  public async extend(
    order: WatchedOrder,
    change: { expectedEnd: number | undefined; expiresAt: number; addHours: number },
    opts: { now: number; status: string },
  ): Promise<boolean> {
    await tick();
    const s = this.orders.get(order.order_id);
    if (s && (s.ended !== undefined || s.cancel_claimed_at !== undefined || s.expires_at !== change.expectedEnd))
      return false;
    if (!s && change.expectedEnd !== undefined) return false;
    const stored = s ?? { order: { ...order } };
    stored.expires_at = change.expiresAt;
    stored.hours = (stored.hours ?? 0) + change.addHours;
    this.orders.set(order.order_id, stored);
    if (!this.watch.has(order.order_id))
      this.watch.set(order.order_id, { status: opts.status, since: opts.now, spot: order.spot === true });
    return true;
  }

  public async dueBefore(before: number, limit: number): Promise<readonly Lease[]> {
    await tick();
    const due = [...this.orders.values()]
      .filter((s) => s.expires_at !== undefined && s.expires_at <= before && s.ended === undefined)
      .sort((a, b) => (a.expires_at ?? 0) - (b.expires_at ?? 0) || a.order.order_id - b.order.order_id)
      .slice(0, limit)
      .map((s) => view(s) as Lease);
    this.reads += due.length;
    return due;
  }

  public async claimWarning(orderId: number, expiresAt: number): Promise<boolean> {
    await tick();
    const s = this.orders.get(orderId);
    if (!s || s.expires_at !== expiresAt || s.ended !== undefined || s.warned_for === expiresAt) return false;
    s.warned_for = expiresAt;
    return true;
  }

  public async claimCancel(
    orderId: number,
    expiresAt: number,
    now: number,
    staleAfterSeconds: number,
  ): Promise<boolean> {
    await tick();
    const s = this.orders.get(orderId);
    if (!s || s.expires_at !== expiresAt || s.ended !== undefined) return false;
    if (s.cancel_claimed_at !== undefined && s.cancel_claimed_at > now - staleAfterSeconds) return false;
    s.cancel_claimed_at = now;
    return true;
  }

  public async releaseCancel(orderId: number, claimedAt: number): Promise<void> {
    await tick();
    const s = this.orders.get(orderId);
    if (s && s.cancel_claimed_at === claimedAt && s.ended === undefined) delete s.cancel_claimed_at;
  }

  public async endLease(orderId: number, reason: LeaseEnd, _now: number, expiresAt?: number): Promise<boolean> {
    await tick();
    const s = this.orders.get(orderId);
    if (!s || s.expires_at === undefined || s.ended !== undefined) return false;
    if (expiresAt !== undefined && s.expires_at !== expiresAt) return false;
    s.ended = reason;
    delete s.cancel_claimed_at;
    return true;
  }

  public async watched(): Promise<ReadonlyMap<number, WatchEntry>> {
    await tick();
    if (this.watch.size > 0) this.reads += 1;
    return new Map(this.watch);
  }

  public async setStatus(orderId: number, prev: WatchEntry, next: WatchEntry | undefined): Promise<boolean> {
    await tick();
    if (!sameEntry(this.watch.get(orderId), prev)) return false;
    if (next) this.watch.set(orderId, next);
    else this.watch.delete(orderId);
    return true;
  }

  public async claimEvent(eventId: string): Promise<boolean> {
    await tick();
    if (this.events.has(eventId)) return false;
    this.events.add(eventId);
    return true;
  }

  public async claimSpotDecrease(orderId: number, now: number, windowSeconds: number): Promise<SpotDecreaseClaim> {
    await tick();
    const last = this.spotDecreases.get(orderId);
    if (last !== undefined && last > now - windowSeconds) return { claimed: false, last_at: last };
    this.spotDecreases.set(orderId, now);
    return { claimed: true };
  }

  public async releaseSpotDecrease(orderId: number, at: number): Promise<void> {
    await tick();
    if (this.spotDecreases.get(orderId) === at) this.spotDecreases.delete(orderId);
  }
}
