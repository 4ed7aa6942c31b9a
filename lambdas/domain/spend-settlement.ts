/**
 * Settling ended orders in the fleet watch (issue 24): every order the relay placed is watched, so
 * the sweep that sees one end (cancelled by its lease, by a cancel-order, outbid, expired, gone)
 * settles its reservation to the actual cost, within one sweep interval of the end. The hours held
 * are the marketplace's own (`billed_hours`, from production's `spend`) when it reports them, read
 * once per sweep with completed orders included; otherwise readiness to the sweep that saw the end.
 */
import { spendTaskOf, type TrackedOrder } from './lease';
import type { MarketplaceClient } from './ports';
import type { OrderEnd, Settlement, SpendStore } from './spend-budget';

export interface SpendSettler {
  /** Settlements made so far (for the metric). */
  readonly settled: Settlement[];
  /** Fresh my_orders reads made for billed hours (0 or 1). */
  readonly reads: () => number;
  /** Settles the order's task; true when done or nothing to do, false when it failed (retry next sweep). */
  order(
    record: Pick<TrackedOrder, 'task_id' | 'spend_task_id'> | undefined,
    end: { readonly ended_at: number; readonly billed_hours?: number | undefined },
  ): Promise<boolean>;
  /** The hours the marketplace billed for an ended order, if it says (one fresh read per sweep). */
  billedHours(orderId: number): Promise<number | undefined>;
}

export const spendSettler = (deps: {
  readonly spend?: Pick<SpendStore, 'settle'>;
  readonly marketplace: Pick<MarketplaceClient, 'listOrders'>;
}): SpendSettler => {
  const settled: Settlement[] = [];
  let reads = 0;
  let billed: Promise<ReadonlyMap<number, number>> | undefined;
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
          } satisfies OrderEnd,
          end.ended_at,
        );
        if (outcome) settled.push(outcome);
        return true;
      } catch {
        return false;
      }
    },
    async billedHours(orderId) {
      if (!deps.spend) return undefined;
      billed ??= (async () => {
        reads += 1;
        try {
          const orders = await deps.marketplace.listOrders({ returnCompleted: true });
          return new Map(
            orders.filter((o) => o.billed_hours !== undefined).map((o) => [o.order_id, o.billed_hours as number]),
          );
        } catch {
          // Time held then comes from readiness to the end the sweep saw.
          return new Map<number, number>();
        }
      })();
      return (await billed).get(orderId);
    },
  };
};
