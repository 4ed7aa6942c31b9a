/**
 * Bench of the fleet watch (issue 14): one sweep over N leases of which 100 are due, on dynalite (the
 * real DynamoDB wire protocol and the real lease store) with the in-memory marketplace, notifier and
 * event sender of the domain tests, so the figure is the sweep's own cost. Reported: marketplace
 * calls, table items read (the due index's O(due) cost: the same at 1,000 and 4,000 leases), sweep
 * time, an idle sweep, and the paced figure: the same calls spaced 1 s apart by the marketplace
 * client's pacing (MARKETPLACE_MIN_INTERVAL_MS), computed from the measured time and the call count.
 */
import { performance } from 'node:perf_hooks';
import { bucketStart } from '../lambdas/adapters/dynamodb/dynamodb-lease-items';
import { DynamoDbLeaseStore } from '../lambdas/adapters/dynamodb/dynamodb-lease-store';
import { sweepFleet } from '../lambdas/domain/leases/fleet-watch';
import { SETTINGS } from '../contract/settings';
import { startDynalite } from '../test/helpers/dynalite';
import { FakeEventSender, FakeMarketplace, FakeNotifier, seedLeases } from '../test/unit/domain/lease-fakes';

export interface LeaseSweepBench {
  readonly leases: number;
  readonly due: number;
  readonly cancelled: number;
  readonly marketplaceCalls: number;
  readonly tableReads: number;
  readonly sweepMs: number;
  /** The same sweep with marketplace calls 1 s apart (the deployed pacing): sweepMs + (calls − 1) × 1 s. */
  readonly pacedSweepS: number;
  readonly idleSweepMs: number;
  readonly idleTableReads: number;
  readonly idleMarketplaceCalls: number;
  readonly seedS: number;
}

const PACE_MS = SETTINGS.marketplaceMinIntervalMs.default;

const benchOne = async (total: number, due: number): Promise<LeaseSweepBench> => {
  const db = await startDynalite();
  try {
    // A minute into a due bucket, as a sweep usually runs.
    const now = bucketStart(1_700_000_000) + 60;
    const market = new FakeMarketplace();
    const tSeed = performance.now();
    await seedLeases(new DynamoDbLeaseStore(db.doc, db.tableName), market, { total, due, now });
    const seedS = (performance.now() - tSeed) / 1000;
    // The watch list holds every seeded order: like the deployed watch, the sweep compares them all with one my_orders read.
    const store = new DynamoDbLeaseStore(db.doc, db.tableName);
    const deps = { leases: store, marketplace: market, notifier: new FakeNotifier(), events: new FakeEventSender() };
    const t = performance.now();
    const report = await sweepFleet(deps, { now });
    const sweepMs = performance.now() - t;
    const callsBefore = market.calls();
    const tIdle = performance.now();
    const idle = await sweepFleet(deps, { now: now + 60 });
    const idleSweepMs = performance.now() - tIdle;
    return {
      leases: total,
      due: report.due,
      cancelled: report.cancelled,
      marketplaceCalls: report.marketplaceCalls,
      tableReads: report.tableReads,
      sweepMs,
      pacedSweepS: (sweepMs + Math.max(0, report.marketplaceCalls - 1) * PACE_MS) / 1000,
      idleSweepMs,
      idleTableReads: idle.tableReads,
      idleMarketplaceCalls: market.calls() - callsBefore,
      seedS,
    };
  } finally {
    await db.close();
  }
};

/** 1,000 leases (the figure) and 4,000 (to show the due query's cost does not grow with them). */
export const benchLeases = async (): Promise<LeaseSweepBench[]> => {
  const out: LeaseSweepBench[] = [];
  for (const total of [1_000, 4_000]) out.push(await benchOne(total, 100));
  return out;
};
