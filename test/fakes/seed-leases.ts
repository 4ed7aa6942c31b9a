/** Seeds leases for the fleet-watch tests and bench (`sweepFleet` over N leases of which some are due). */
import type { LeaseStore } from '../../lambdas/domain/leases/lease-ports';
import { anOrder } from './builders';
import type { FakeMarketplace } from './marketplace';

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
    await Promise.all(
      ids.slice(i, i + concurrency).map(async (id) => {
        const isDue = id <= opts.due;
        const expiresAt = isDue ? opts.now - 1 - (id % 50) : opts.now + 7200 + id * 600;
        await store.track(
          { order_id: id, task_id: `task-${id}`, callback_url: `https://receiver.example/${id}` },
          { now: opts.now - 3600, status: 'running', lease: { expires_at: expiresAt, hours: 1 } },
        );
      }),
    );
  }
  market.orders.push(...ids.map((id) => anOrder(id)));
};
