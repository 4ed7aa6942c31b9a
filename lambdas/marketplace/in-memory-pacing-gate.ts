/**
 * Pacing within one process (tests, benches, a single local runtime). The DynamoDB gate shares the
 * same schedule across Lambda instances.
 */
import type { PacingGate, PacingLaneRequest } from '../domain/ports';
import { claimLaneSlot, claimSlot, EMPTY_SCHEDULE, type PacingSchedule } from './pacing-schedule';

/** Hands out send times at least `intervalMs` apart per key, in call order (pacing-schedule.ts). */
export class InMemoryPacingGate implements PacingGate {
  private readonly schedules = new Map<string, PacingSchedule>();

  public async acquire(keyId: string, intervalMs: number, now: number): Promise<number> {
    const claim = claimSlot(this.schedules.get(keyId) ?? EMPTY_SCHEDULE, now, intervalMs);
    this.schedules.set(keyId, claim.schedule);
    return claim.slot;
  }

  public async acquireInLane(keyId: string, intervalMs: number, now: number, lane: PacingLaneRequest): Promise<number | undefined> {
    const claim = claimLaneSlot(this.schedules.get(keyId) ?? EMPTY_SCHEDULE, now, intervalMs, lane);
    if (claim) this.schedules.set(keyId, claim.schedule);
    return claim?.slot;
  }
}
