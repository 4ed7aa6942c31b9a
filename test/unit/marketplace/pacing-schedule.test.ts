import * as fc from 'fast-check';
import { DynamoDbPacingGate } from '../../../lambdas/adapters/dynamodb/dynamodb-pacing-gate';
import type { PacingGate } from '../../../lambdas/domain/ports';
import { InMemoryPacingGate } from '../../../lambdas/marketplace/in-memory-pacing-gate';
import {
  claimLaneSlot,
  claimSlot,
  EMPTY_SCHEDULE,
  type PacingSchedule,
} from '../../../lambdas/marketplace/pacing-schedule';
import { startDynalite, type LocalDynamo } from '../../helpers/dynalite';

const INTERVAL = 1_100;
const SPACING = 5_100;
const LANE = { name: 'create_order', spacingMs: SPACING };

interface Slot {
  readonly slot: number;
  readonly now: number;
  readonly lane: boolean;
}

/** Every slot keeps INTERVAL from every other; lane slots keep SPACING from each other; nobody sends before asking. */
const expectPaced = (slots: readonly Slot[]): void => {
  const sorted = [...slots].sort((a, b) => a.slot - b.slot);
  sorted.forEach((s, i) => {
    expect(s.slot).toBeGreaterThanOrEqual(s.now);
    if (i > 0) expect(s.slot - sorted[i - 1]!.slot).toBeGreaterThanOrEqual(INTERVAL);
  });
  const lane = sorted.filter((s) => s.lane);
  lane.forEach((s, i) => {
    if (i > 0) expect(s.slot - lane[i - 1]!.slot).toBeGreaterThanOrEqual(SPACING);
  });
};

describe('pacing schedule', () => {
  it('keeps every slot an interval apart and lane slots a spacing apart, for any mix of calls', () => {
    fc.assert(
      fc.property(
        fc.array(fc.record({ gap: fc.integer({ min: 0, max: 3_000 }), lane: fc.boolean() }), { maxLength: 60 }),
        (calls) => {
          let schedule: PacingSchedule = EMPTY_SCHEDULE;
          let now = 1_000_000;
          const slots: Slot[] = [];
          for (const call of calls) {
            now += call.gap;
            const claim = call.lane ? claimLaneSlot(schedule, now, INTERVAL, LANE) : claimSlot(schedule, now, INTERVAL);
            if (!claim) throw new Error('no limit was set, so a lane claim must succeed');
            schedule = claim.schedule;
            slots.push({ slot: claim.slot, now, lane: call.lane });
          }
          expectPaced(slots);
        },
      ),
      { numRuns: 300 },
    );
  });

  it('lets ordinary calls use the slots before a waiting lane call (a waiting create does not starve reads)', () => {
    // Two creates: the second waits a full spacing. Reads asked meanwhile go before it.
    let schedule = EMPTY_SCHEDULE;
    const first = claimLaneSlot(schedule, 0, INTERVAL, LANE)!;
    schedule = first.schedule;
    const second = claimLaneSlot(schedule, 10, INTERVAL, LANE)!;
    schedule = second.schedule;
    const reads: number[] = [];
    for (let i = 0; i < 4; i += 1) {
      const claim = claimSlot(schedule, 20, INTERVAL);
      schedule = claim.schedule;
      reads.push(claim.slot);
    }
    expect(first.slot).toBe(0);
    expect(second.slot).toBe(SPACING);
    // Reads fill the gap between the creates, then continue after the second one.
    expect(reads).toEqual([INTERVAL, 2 * INTERVAL, 3 * INTERVAL, SPACING + INTERVAL]);
  });

  it('refuses a lane slot further ahead than maxWaitMs and claims nothing', () => {
    const first = claimLaneSlot(EMPTY_SCHEDULE, 0, INTERVAL, LANE)!;
    expect(claimLaneSlot(first.schedule, 0, INTERVAL, { ...LANE, maxWaitMs: SPACING - 1 })).toBeUndefined();
    expect(claimLaneSlot(first.schedule, 0, INTERVAL, { ...LANE, maxWaitMs: SPACING })?.slot).toBe(SPACING);
  });
});

describe.each([
  ['InMemoryPacingGate', false],
  ['DynamoDbPacingGate (dynalite, one gate instance per caller, like Lambda instances)', true],
])('%s with a create lane', (_name, shared) => {
  let dynamo: LocalDynamo | undefined;
  let gates: () => PacingGate;

  beforeAll(async () => {
    if (shared) {
      dynamo = await startDynalite({ tableName: 'relay' });
      gates = () => new DynamoDbPacingGate(dynamo!.doc, 'relay');
    } else {
      const gate = new InMemoryPacingGate();
      gates = () => gate;
    }
  });
  afterAll(async () => {
    await dynamo?.close();
  });

  it('hands concurrent creates and reads slots that keep both limits', async () => {
    const key = `lane-${Math.random().toString(16).slice(2)}`;
    const now = 5_000_000;
    const calls = Array.from({ length: 24 }, (_, i) => i % 3 === 0);
    const slots = await Promise.all(
      calls.map(async (lane): Promise<Slot> => {
        const gate = gates();
        const slot = lane ? await gate.acquireInLane(key, INTERVAL, now, LANE) : await gate.acquire(key, INTERVAL, now);
        if (slot === undefined) throw new Error('refused without a limit');
        return { slot, now, lane };
      }),
    );
    expectPaced(slots);
    // 8 creates need 7 spacings; the 16 reads fit in between instead of queueing behind them.
    const last = Math.max(...slots.map((s) => s.slot));
    expect(last - now).toBeLessThanOrEqual(7 * SPACING + INTERVAL);
  });

  it('refuses a create whose slot lies beyond maxWaitMs without taking it', async () => {
    const key = `refuse-${Math.random().toString(16).slice(2)}`;
    const gate = gates();
    expect(await gate.acquireInLane(key, INTERVAL, 0, LANE)).toBe(0);
    expect(await gate.acquireInLane(key, INTERVAL, 0, { ...LANE, maxWaitMs: 1_000 })).toBeUndefined();
    // The refused call took nothing: the next create still gets the first free lane slot.
    expect(await gate.acquireInLane(key, INTERVAL, 0, LANE)).toBe(SPACING);
  });
});
