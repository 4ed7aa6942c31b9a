/**
 * Settling ended orders in the fleet watch (issue 24): every order the relay placed is watched, so
 * the sweep that sees one end (cancelled by its lease, by a cancel-order, outbid, expired, gone)
 * settles its reservation to the actual cost, within one sweep interval of the end. The cost is the
 * marketplace's `spend` where it reports it (production's, read once per sweep with completed orders
 * included); otherwise the price steps over the hours held: readiness to the moment the relay
 * cancelled the order when it did (issue 38 §9, the order record's `cancelled_at`), else to the sweep
 * that saw the end (the bound for an order that ended on its own).
 */
import { spendTaskOf, type TrackedOrder } from '../leases/lease';
import type { Order } from '../marketplace-types';
import type { MarketplaceClient } from '../ports';
import type { OrderEnd, Settlement, SpendStore } from './spend-budget';

export interface SpendSettler {
  /** Settlements made so far (for the metric). */
  readonly settled: Settlement[];
  /** Fresh my_orders reads made for billed hours (0 or 1). */
  readonly reads: () => number;
  /** Settles the order's task; true when done or nothing to do, false when it failed (retry next sweep). */
  order(record: Pick<TrackedOrder, 'task_id' | 'spend_task_id'> | undefined, end: SweepEnd): Promise<boolean>;
  /** What the marketplace billed for an ended order, if it says (one fresh read per sweep). */
  billed(orderId: number): Promise<Billed | undefined>;
}

/** What the marketplace says an order cost (production's my_orders): hours, `spend` in its coin, creation fee. */
export type Billed = Pick<Order, 'billed_hours' | 'spend' | 'creation_fee'>;

/** An order's end as a sweep saw it, with what the marketplace billed when it said. */
export type SweepEnd = { readonly ended_at: number } & { readonly [K in keyof Billed]?: Billed[K] | undefined };

/** The marketplace's figures of an order listed in my_orders (none when it reports none). */
export const billedOf = (order: Order | undefined): Billed | undefined =>
  order && (order.spend !== undefined || order.billed_hours !== undefined)
    ? {
        ...(order.billed_hours !== undefined ? { billed_hours: order.billed_hours } : {}),
        ...(order.spend !== undefined ? { spend: order.spend } : {}),
        ...(order.creation_fee !== undefined ? { creation_fee: order.creation_fee } : {}),
      }
    : undefined;

export const spendSettler = (deps: {
  readonly spend?: Pick<SpendStore, 'settle'>;
  readonly marketplace: Pick<MarketplaceClient, 'listOrders'>;
}): SpendSettler => {
  const settled: Settlement[] = [];
  let reads = 0;
  let billed: Promise<ReadonlyMap<number, Billed>> | undefined;
  return {
    settled,
    reads: () => reads,
    async order(record, end) {
      if (!deps.spend || !record) return true;
      try {
        const outcome = await deps.spend.settle(
          spendTaskOf(record),
          {
            ended_at: end.ended_at,
            ...(end.billed_hours !== undefined ? { billed_hours: end.billed_hours } : {}),
            ...(end.spend !== undefined ? { spend: end.spend } : {}),
            ...(end.creation_fee !== undefined ? { creation_fee: end.creation_fee } : {}),
          } satisfies OrderEnd,
          end.ended_at,
        );
        if (outcome) settled.push(outcome);
        return true;
      } catch {
        return false;
      }
    },
    async billed(orderId) {
      if (!deps.spend) return undefined;
      billed ??= (async () => {
        reads += 1;
        try {
          const orders = await deps.marketplace.listOrders({ returnCompleted: true });
          const map = new Map<number, Billed>();
          for (const o of orders) {
            const figures = billedOf(o);
            if (figures && !map.has(o.order_id)) map.set(o.order_id, figures);
          }
          return map;
        } catch {
          // The cost then comes from the price steps × time held (readiness to the end the sweep saw).
          return new Map<number, Billed>();
        }
      })();
      return (await billed).get(orderId);
    },
  };
};
