/**
 * The pacing schedule of one API key, as pure functions shared by the in-process and the DynamoDB
 * gates. Every call gets a send slot at least `intervalMs` from every other slot (the marketplace's
 * 1 request/s). A call in a lane (create_order: 1 per 5 s) also gets a slot `spacingMs` after the
 * previous slot of its lane, and that slot is *reserved* in the shared timeline: while the lane
 * call waits, other calls keep taking the free slots before and after it instead of queueing
 * behind it. A create waiting 5 s never starves reads.
 *
 * Adaptive interval: a rate-limited answer widens the key's interval (`widenSchedule`: doubling,
 * capped) for every caller until a quiet period passes without another one; then the caller's own
 * interval applies again, in one step.
 */
import type { RateLimitReport } from '../domain/ports';

export interface PacingSchedule {
  /** The earliest slot after every slot handed out to non-lane calls (epoch ms). */
  readonly nextFree: number;
  /** Future lane slots other calls must keep `intervalMs` away from (epoch ms, ascending). */
  readonly reserved: readonly number[];
  /** Per lane, the earliest slot its next call may take (epoch ms). */
  readonly lanes: Readonly<Record<string, number>>;
  /** The widened interval after rate-limited answers; absent = never widened. In force until `quietUntil`. */
  readonly widening?: Widening;
}

export interface Widening {
  /** The marketplace-facing interval (ms): the policy's minimum doubled per widening, capped. */
  readonly intervalMs: number;
  /** What every caller adds to its own spacing while in force: `intervalMs` minus the minimum it was doubled from. */
  readonly extraMs: number;
  /** In force until then (epoch ms): the last rate-limited answer plus the quiet period. */
  readonly quietUntil: number;
  /** When the interval last widened (epoch ms): slots handed out before it are void. */
  readonly widenedAt: number;
}

export const EMPTY_SCHEDULE: PacingSchedule = { nextFree: Number.NEGATIVE_INFINITY, reserved: [], lanes: {} };

export interface PacingLane {
  /** Lane name, e.g. `create_order`. */
  readonly name: string;
  /** Minimum spacing of the lane's slots. */
  readonly spacingMs: number;
  /** Refuse (return undefined, claim nothing) when the slot would be later than now + this. @default no limit */
  readonly maxWaitMs?: number;
}

export interface Claim {
  readonly slot: number;
  readonly schedule: PacingSchedule;
  /** The spacing the slot was claimed with: the caller's interval plus the widening in force. */
  readonly spacingMs: number;
}

/** The widening in force at `now`, if any. */
export const wideningAt = (schedule: PacingSchedule, now: number): Widening | undefined =>
  schedule.widening && now < schedule.widening.quietUntil ? schedule.widening : undefined;

/** The caller's spacing `intervalMs` plus the widening in force at `now`. */
export const spacingAt = (schedule: PacingSchedule, now: number, intervalMs: number): number =>
  intervalMs + (wideningAt(schedule, now)?.extraMs ?? 0);

/** Moves `slot` past every reserved slot closer than `intervalMs` to it. */
const avoidReserved = (slot: number, reserved: readonly number[], intervalMs: number): number => {
  let at = slot;
  for (const r of reserved) if (at > r - intervalMs && at < r + intervalMs) at = r + intervalMs;
  return at;
};

const liveReserved = (schedule: PacingSchedule, now: number, intervalMs: number): number[] =>
  schedule.reserved.filter((r) => r + intervalMs > now).sort((a, b) => a - b);

/** A slot for an ordinary call: the earliest free one at or after `now`. */
export const claimSlot = (schedule: PacingSchedule, now: number, intervalMs: number): Claim => {
  const spacingMs = spacingAt(schedule, now, intervalMs);
  const reserved = liveReserved(schedule, now, spacingMs);
  const slot = avoidReserved(Math.max(now, schedule.nextFree), reserved, spacingMs);
  return { slot, spacingMs, schedule: { ...schedule, nextFree: slot + spacingMs, reserved } };
};

/**
 * A slot for a lane call: after every slot already handed out, `spacingMs` after the lane's last
 * slot, away from other reservations. The slot is reserved; `nextFree` does not move, so ordinary
 * calls go on using the slots in between.
 */
export const claimLaneSlot = (
  schedule: PacingSchedule,
  now: number,
  intervalMs: number,
  lane: PacingLane,
): Claim | undefined => {
  const spacingMs = spacingAt(schedule, now, intervalMs);
  const reserved = liveReserved(schedule, now, spacingMs);
  const earliest = Math.max(now, schedule.nextFree, schedule.lanes[lane.name] ?? Number.NEGATIVE_INFINITY);
  const slot = avoidReserved(earliest, reserved, spacingMs);
  if (lane.maxWaitMs !== undefined && slot - now > lane.maxWaitMs) return undefined;
  return {
    slot,
    spacingMs,
    schedule: {
      ...schedule,
      nextFree: schedule.nextFree,
      reserved: [...reserved, slot].sort((a, b) => a - b),
      lanes: { ...schedule.lanes, [lane.name]: slot + lane.spacingMs },
    },
  };
};

/** Until when ordinary calls are constrained; after it an ordinary call may send at once. */
export const busyUntil = (schedule: PacingSchedule, intervalMs: number): number =>
  Math.max(schedule.nextFree, ...schedule.reserved.map((r) => r + intervalMs));

/** The last moment the schedule constrains anything, lanes included; after it the schedule is empty again. */
export const scheduleHorizon = (schedule: PacingSchedule, intervalMs: number): number =>
  Math.max(busyUntil(schedule, intervalMs), ...Object.values(schedule.lanes));

/**
 * The earliest slot that is `spacingMs` after every slot of `schedule` that may have been sent by
 * `now`: the ordinary timeline's `nextFree` and the reserved slots, but never later than a spacing
 * after now (a slot after now is voided by the widening, so only the slots before it count).
 */
const sentFloor = (schedule: PacingSchedule, now: number, spacingMs: number): number =>
  Math.min(busyUntil(schedule, spacingMs), now + spacingMs);

export interface WidenOutcome {
  readonly schedule: PacingSchedule;
  /** The marketplace-facing interval before and after the report. */
  readonly previousMs: number;
  readonly intervalMs: number;
  readonly widened: boolean;
}

/**
 * A rate-limited answer to a request sent at `report.sentAt`, reported at `now` by a caller pacing
 * at `intervalMs` (its minimum plus its lateness margin).
 *
 * - The interval in force (the policy's minimum when quiet) doubles, capped at `maxIntervalMs`, but
 *   only if the request was sent at or after the last widening: answers to requests paced at the old
 *   interval (several in flight when the first 429 came) were already answered by that widening.
 *   Every report restarts the quiet period; a report that does not widen does nothing else.
 * - A widening voids every slot claimed at or before it whose time had not come (their holders see
 *   `widenedAt` and claim again) and restarts the timeline: the next slot is a new spacing after the
 *   rejected send (safe whether or not the marketplace counted it), each lane's next slot at most its
 *   spacing from now (its last send was at or before now). No time is lost to voided slots left
 *   standing in the timeline. Slots at or before now may have been sent after the rejected one (its
 *   answer came late, or another caller's request was in flight): the next slot also stays the old
 *   spacing after every one of them (`sentFloor`), so no two sends come closer than the narrower of
 *   their spacings.
 */
export const widenSchedule = (
  schedule: PacingSchedule,
  now: number,
  intervalMs: number,
  report: RateLimitReport,
): WidenOutcome => {
  const { policy } = report;
  const inForce = wideningAt(schedule, now);
  const previousMs = inForce?.intervalMs ?? policy.minIntervalMs;
  const pacedAtCurrent = !inForce || report.sentAt >= inForce.widenedAt;
  const intervalAfter = pacedAtCurrent
    ? Math.max(previousMs, Math.min(policy.maxIntervalMs, previousMs * 2))
    : previousMs;
  const quietUntil = now + policy.quietMs;
  if (intervalAfter <= previousMs) {
    // Nothing widens; an interval in force stays so for another quiet period.
    const widening = inForce ? { ...inForce, quietUntil } : schedule.widening;
    return {
      schedule: { ...schedule, ...(widening ? { widening } : {}) },
      previousMs,
      intervalMs: previousMs,
      widened: false,
    };
  }
  const extraMs = intervalAfter - policy.minIntervalMs;
  const spacingMs = intervalMs + extraMs;
  // Slots left standing were claimed after the last widening, with at most its spacing.
  const keptSpacing = Math.min(spacingMs, intervalMs + (schedule.widening?.extraMs ?? 0));
  const laneSpacing = new Map(report.lanes.map((l) => [l.name, l.spacingMs]));
  const lanes = Object.fromEntries(
    Object.entries(schedule.lanes).map(([name, next]) => {
      const spacing = laneSpacing.get(name);
      return [name, spacing === undefined ? next : Math.min(next, now + spacing)];
    }),
  );
  return {
    schedule: {
      nextFree: Math.max(now, report.sentAt + spacingMs, sentFloor(schedule, now, keptSpacing)),
      reserved: [],
      lanes,
      widening: { intervalMs: intervalAfter, extraMs, quietUntil, widenedAt: now },
    },
    previousMs,
    intervalMs: intervalAfter,
    widened: true,
  };
};
