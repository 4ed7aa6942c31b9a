/**
 * The pacing schedule of one API key, as pure functions shared by the in-process and the DynamoDB
 * gates. Every call gets a send slot at least `intervalMs` from every other slot (the marketplace's
 * 1 request/s). A call in a lane (create_order: 1 per 5 s) also gets a slot `spacingMs` after the
 * previous slot of its lane, and that slot is *reserved* in the shared timeline: while the lane
 * call waits, other calls keep taking the free slots before and after it instead of queueing
 * behind it. A create waiting 5 s never starves reads.
 */

export interface PacingSchedule {
  /** The earliest slot after every slot handed out to non-lane calls (epoch ms). */
  readonly nextFree: number;
  /** Future lane slots other calls must keep `intervalMs` away from (epoch ms, ascending). */
  readonly reserved: readonly number[];
  /** Per lane, the earliest slot its next call may take (epoch ms). */
  readonly lanes: Readonly<Record<string, number>>;
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
}

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
  const reserved = liveReserved(schedule, now, intervalMs);
  const slot = avoidReserved(Math.max(now, schedule.nextFree), reserved, intervalMs);
  return { slot, schedule: { ...schedule, nextFree: slot + intervalMs, reserved } };
};

/**
 * A slot for a lane call: after every slot already handed out, `spacingMs` after the lane's last
 * slot, away from other reservations. The slot is reserved; `nextFree` does not move, so ordinary
 * calls go on using the slots in between.
 */
export const claimLaneSlot = (schedule: PacingSchedule, now: number, intervalMs: number, lane: PacingLane): Claim | undefined => {
  const reserved = liveReserved(schedule, now, intervalMs);
  const earliest = Math.max(now, schedule.nextFree, schedule.lanes[lane.name] ?? Number.NEGATIVE_INFINITY);
  const slot = avoidReserved(earliest, reserved, intervalMs);
  if (lane.maxWaitMs !== undefined && slot - now > lane.maxWaitMs) return undefined;
  return {
    slot,
    schedule: {
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
