/**
 * Pacing within one process (tests, benches, a single local runtime). The DynamoDB gate shares the
 * same schedule across Lambda instances.
 */
import type { PacingGate, PacingLaneRequest, PacingWidening, RateLimitReport } from '../domain/ports';
import { claimLaneSlot, claimSlot, EMPTY_SCHEDULE, widenSchedule, type PacingSchedule } from './pacing-schedule';

/** Hands out send times at least `intervalMs` apart per key, in call order (pacing-schedule.ts), widened after rate limits. */
export class InMemoryPacingGate implements PacingGate {
  private readonly schedules = new Map<string, PacingSchedule>();

  public async acquire(keyId: string, intervalMs: number, now: number): Promise<number> {
    const claim = claimSlot(this.schedules.get(keyId) ?? EMPTY_SCHEDULE, now, intervalMs);
    this.schedules.set(keyId, claim.schedule);
    return claim.slot;
  }

  public async acquireInLane(
    keyId: string,
    intervalMs: number,
    now: number,
    lane: PacingLaneRequest,
  ): Promise<number | undefined> {
    const claim = claimLaneSlot(this.schedules.get(keyId) ?? EMPTY_SCHEDULE, now, intervalMs, lane);
    if (claim) this.schedules.set(keyId, claim.schedule);
    return claim?.slot;
  }

  public async rateLimited(
    keyId: string,
    intervalMs: number,
    now: number,
    report: RateLimitReport,
  ): Promise<PacingWidening> {
    const { schedule, ...widening } = widenSchedule(
      this.schedules.get(keyId) ?? EMPTY_SCHEDULE,
      now,
      intervalMs,
      report,
    );
    this.schedules.set(keyId, schedule);
    return widening;
  }

  public async widenedAt(keyId: string): Promise<number | undefined> {
    return this.schedules.get(keyId)?.widening?.widenedAt;
  }
}
