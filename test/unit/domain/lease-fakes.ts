/**
 * In-memory fakes of the fleet watch's ports, with call counters: for the domain tests and for a
 * bench of the sweep (seed with `seedLeases`, run `sweepFleet`, read the SweepReport and the counters).
 */
import type { Lease, LeaseEnd, OrderEvent, TrackedOrder, WatchedOrder, WatchEntry } from '../../../lambdas/domain/lease';
import type { EventSender, LeaseStore, LeaseTerms, SpotDecreaseClaim } from '../../../lambdas/domain/lease-ports';
import type { Order } from '../../../lambdas/domain/marketplace-types';
import type { MarketplaceClient, Notifier } from '../../../lambdas/domain/ports';

/** Lets other pending promises run, so concurrent use cases really interleave. */
const tick = () => new Promise<void>((resolve) => setImmediate(resolve));

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
    if (!this.orders.has(order.order_id)) this.orders.set(order.order_id, { order: { ...order }, ...(opts.lease ? { ...opts.lease } : {}) });
    if (!this.watch.has(order.order_id)) this.watch.set(order.order_id, { status: opts.status, since: opts.now, spot: order.spot === true });
  }

  public async get(orderId: number): Promise<TrackedOrder | undefined> {
    await tick();
    const s = this.orders.get(orderId);
    if (s) this.reads += 1;
    return s ? view(s) : undefined;
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
    if (s && (s.ended !== undefined || s.cancel_claimed_at !== undefined || s.expires_at !== change.expectedEnd)) return false;
    if (!s && change.expectedEnd !== undefined) return false;
    const stored = s ?? { order: { ...order } };
    stored.expires_at = change.expiresAt;
    stored.hours = (stored.hours ?? 0) + change.addHours;
    this.orders.set(order.order_id, stored);
    if (!this.watch.has(order.order_id)) this.watch.set(order.order_id, { status: opts.status, since: opts.now, spot: order.spot === true });
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

  public async claimCancel(orderId: number, expiresAt: number, now: number, staleAfterSeconds: number): Promise<boolean> {
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

/** A marketplace holding `orders`; cancel removes an order. Failures are injected per order id. */
export class FakeMarketplace implements Pick<MarketplaceClient, 'listOrders' | 'cancelOrder' | 'setSpotPrice'> {
  public orders: Order[] = [];
  public listCalls = 0;
  public readonly cancelCalls: number[] = [];
  public readonly spotPriceCalls: { order_id: number; price: number }[] = [];
  public readonly cancelFailures = new Map<number, Error>();
  public spotPriceFailure: Error | undefined;

  public async listOrders(): Promise<readonly Order[]> {
    await tick();
    this.listCalls += 1;
    return this.orders.map((o) => ({ ...o }));
  }

  public async cancelOrder(orderId: number): Promise<void> {
    await tick();
    this.cancelCalls.push(orderId);
    const failure = this.cancelFailures.get(orderId);
    if (failure) throw failure;
    this.orders = this.orders.filter((o) => o.order_id !== orderId);
  }

  public async setSpotPrice(orderId: number, desiredPrice: number): Promise<void> {
    await tick();
    this.spotPriceCalls.push({ order_id: orderId, price: desiredPrice });
    if (this.spotPriceFailure) throw this.spotPriceFailure;
    this.orders = this.orders.map((o) => (o.order_id === orderId ? { ...o, price: desiredPrice } : o));
  }

  /** Total calls, the way the bench counts marketplace traffic. */
  public calls(): number {
    return this.listCalls + this.cancelCalls.length + this.spotPriceCalls.length;
  }
}

export class FakeNotifier implements Pick<Notifier, 'chat'> {
  public readonly texts: string[] = [];
  public async chat(text: string): Promise<void> {
    this.texts.push(text);
  }
}

export class FakeEventSender implements EventSender {
  public readonly sent: { url: string; id: string; event: OrderEvent }[] = [];
  public fail = false;
  public async send(url: string, eventId: string, event: OrderEvent): Promise<boolean> {
    await tick();
    if (this.fail) return false;
    this.sent.push({ url, id: eventId, event });
    return true;
  }
}

/** A `my_orders` element. */
export const order = (orderId: number, fields: Partial<Order> = {}): Order => ({
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

/**
 * Seeds `total` leased, watched orders into `store` and `market`, of which `due` end before `now`
 * (the rest end hours to days later): the bench's "1,000 leases of which 100 are due".
 */
export const seedLeases = async (
  store: LeaseStore,
  market: FakeMarketplace,
  opts: { total: number; due: number; now: number; concurrency?: number },
): Promise<void> => {
  const ids = Array.from({ length: opts.total }, (_, i) => i + 1);
  const concurrency = opts.concurrency ?? 25;
  for (let i = 0; i < ids.length; i += concurrency) {
    await Promise.all(ids.slice(i, i + concurrency).map(async (id) => {
      const isDue = id <= opts.due;
      const expiresAt = isDue ? opts.now - 1 - (id % 50) : opts.now + 7200 + id * 600;
      await store.track(
        { order_id: id, task_id: `task-${id}`, callback_url: `https://receiver.example/${id}` },
        { now: opts.now - 3600, status: 'running', lease: { expires_at: expiresAt, hours: 1 } },
      );
    }));
  }
  market.orders.push(...ids.map((id) => order(id)));
};
