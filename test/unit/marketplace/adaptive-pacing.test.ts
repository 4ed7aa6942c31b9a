/**
 * Issue 20 item 8: the shared pacing interval widens on rate-limited answers (doubling, capped at
 * 10 s) for every caller and narrows back to the minimum after a quiet minute. Clocks are injected:
 * nothing here waits for real time.
 */
import * as fc from 'fast-check';
import { GetCommand } from '@aws-sdk/lib-dynamodb';
import { DynamoDbPacingGate } from '../../../lambdas/adapters/dynamodb/dynamodb-pacing-gate';
import { MarketplaceRateLimitedError } from '../../../lambdas/domain/errors';
import type { AdaptivePacingPolicy, PacingGate, RateLimitReport } from '../../../lambdas/domain/ports';
import { HttpMarketplaceClient } from '../../../lambdas/marketplace/http-marketplace-client';
import { InMemoryPacingGate } from '../../../lambdas/marketplace/in-memory-pacing-gate';
import {
  claimLaneSlot,
  claimSlot,
  EMPTY_SCHEDULE,
  widenSchedule,
  type PacingSchedule,
} from '../../../lambdas/marketplace/pacing-schedule';
import { startDynalite, type LocalDynamo } from '../../helpers/dynalite';
import { lostAnswerClient } from '../../helpers/lost-answer';

const MIN = 1_000;
/** The client's spacing: its minimum plus the gate's lateness margin. */
const SPACING = MIN + 100;
const POLICY: AdaptivePacingPolicy = { minIntervalMs: MIN, maxIntervalMs: 10_000, quietMs: 60_000 };
const CREATE = { name: 'create_order', spacingMs: 5_100 };
const T0 = 1_700_000_000_000;

const report = (sentAt: number, policy: AdaptivePacingPolicy = POLICY): RateLimitReport => ({
  sentAt,
  policy,
  lanes: [CREATE],
});

describe('adaptive pacing schedule', () => {
  /** Reports a rate limit for a request sent at `now` (the usual case: the 429 comes straight back). */
  const widenAt = (schedule: PacingSchedule, now: number) => widenSchedule(schedule, now, SPACING, report(now));

  it('doubles the interval per rate-limited answer sent at the interval in force, capped at 10 s', () => {
    let schedule = EMPTY_SCHEDULE;
    const intervals: number[] = [];
    for (let i = 0; i < 6; i += 1) {
      const out = widenAt(schedule, T0 + i * 1_000);
      schedule = out.schedule;
      intervals.push(out.intervalMs);
    }
    expect(intervals).toEqual([2_000, 4_000, 8_000, 10_000, 10_000, 10_000]);
    // Every caller adds the widening to its own spacing: the lateness margin stays on top.
    expect(claimSlot(schedule, T0 + 10_000, SPACING).spacingMs).toBe(10_000 + 100);
  });

  it('widens once for the requests that were in flight: answers to requests sent before the widening only restart the quiet minute', () => {
    const first = widenAt(EMPTY_SCHEDULE, T0 + 2_000);
    // Sent before the widening (paced at the old interval), answered after it.
    const late = widenSchedule(first.schedule, T0 + 2_050, SPACING, report(T0 + 1_900));
    expect(late).toEqual(expect.objectContaining({ widened: false, previousMs: 2_000, intervalMs: 2_000 }));
    expect(late.schedule.widening?.quietUntil).toBe(T0 + 2_050 + 60_000);
    // A request sent after the widening and still refused: the interval doubles again.
    expect(widenSchedule(late.schedule, T0 + 5_000, SPACING, report(T0 + 5_000)).intervalMs).toBe(4_000);
  });

  it('narrows back to the minimum in one step after a quiet minute, and not before', () => {
    let schedule = EMPTY_SCHEDULE;
    for (let i = 0; i < 4; i += 1) schedule = widenAt(schedule, T0 + i).schedule;
    expect(schedule.widening?.intervalMs).toBe(10_000);
    const last = T0 + 3;
    expect(claimSlot(schedule, last + 59_999, SPACING).spacingMs).toBe(10_100);
    expect(claimSlot(schedule, last + 60_000, SPACING).spacingMs).toBe(SPACING);
    // The next rate limit after a quiet minute doubles from the minimum again.
    expect(widenAt(schedule, last + 60_000)).toEqual(
      expect.objectContaining({ previousMs: MIN, intervalMs: 2_000, widened: true }),
    );
  });

  it('voids the slots handed out before a widening and restarts the timeline one new spacing after the refused send', () => {
    // Five queued reads at 1.1 s and a create reserved further on.
    let schedule = EMPTY_SCHEDULE;
    for (let i = 0; i < 5; i += 1) schedule = claimSlot(schedule, T0, SPACING).schedule;
    schedule = claimLaneSlot(schedule, T0, SPACING, CREATE)!.schedule;
    expect(schedule.nextFree).toBe(T0 + 5 * SPACING);
    // The second read (sent at T0 + 1.1 s) is refused.
    const out = widenSchedule(schedule, T0 + 1_150, SPACING, report(T0 + 1_100));
    expect(out.schedule.widening?.widenedAt).toBe(T0 + 1_150);
    expect(out.schedule.reserved).toEqual([]);
    expect(out.schedule.nextFree).toBe(T0 + 1_100 + 2_100);
    // The create lane's next slot is at most its spacing from now (its last send was at or before now).
    expect(out.schedule.lanes.create_order).toBe(T0 + 1_150 + CREATE.spacingMs);
    // Holders of voided slots claim again, now 2.1 s apart, with no gap for the voided ones.
    const again = claimSlot(out.schedule, T0 + 2_200, SPACING);
    expect(again.slot).toBe(T0 + 3_200);
    expect(claimSlot(again.schedule, T0 + 2_200, SPACING).slot).toBe(T0 + 5_300);
  });

  it('keeps the create lane at its own 5 s while the interval is narrower, and at the interval once it is wider', () => {
    let schedule = widenAt(EMPTY_SCHEDULE, T0).schedule; // 2 s
    const lane: number[] = [];
    for (let i = 0; i < 3; i += 1) {
      const claim = claimLaneSlot(schedule, T0 + 1_000, SPACING, CREATE)!;
      schedule = claim.schedule;
      lane.push(claim.slot);
    }
    expect(lane.slice(1).map((s, i) => s - lane[i]!)).toEqual([CREATE.spacingMs, CREATE.spacingMs]);
    for (let i = 0; i < 3; i += 1) schedule = widenAt(schedule, T0 + 20_000 + i).schedule; // 4, 8, 10 s
    const wide = claimLaneSlot(schedule, T0 + 30_000, SPACING, CREATE)!;
    expect(claimLaneSlot(wide.schedule, T0 + 30_000, SPACING, CREATE)!.slot - wide.slot).toBe(10_100);
  });

  it('widens nothing when pacing is off or the cap is the minimum', () => {
    expect(widenSchedule(EMPTY_SCHEDULE, T0, 5, report(T0, { ...POLICY, minIntervalMs: 0 }))).toEqual(
      expect.objectContaining({ widened: false, intervalMs: 0 }),
    );
    const capped = widenSchedule(EMPTY_SCHEDULE, T0, SPACING, report(T0, { ...POLICY, maxIntervalMs: MIN }));
    expect(capped).toEqual(expect.objectContaining({ widened: false, intervalMs: MIN }));
    expect(capped.schedule).toEqual(EMPTY_SCHEDULE);
  });

  type Event = { gap: number; kind: 'read' | 'create' | 'limited'; back?: number };
  /**
   * Plays `calls` against the schedule as the client does and checks what was sent: every pair of
   * kept slots the narrower of their spacings apart, creates a lane spacing apart. A `limited` call
   * reports a rate limit for the request sent `back` sends before the last one sent by now (0 = the
   * last; more = its answer came after later sends).
   */
  const expectSentSlotsSpaced = (calls: readonly Event[]): void => {
    let schedule: PacingSchedule = EMPTY_SCHEDULE;
    let now = T0;
    const slots: { slot: number; claimedAt: number; spacing: number; lane: boolean }[] = [];
    const widenings: number[] = [];
    // As the client: a holder whose slot made it wait checks widenedAt when its slot comes; a widening
    // at or after its claim (same millisecond included: it may have come first) and by its slot voids it.
    const voided = (s: (typeof slots)[number]) =>
      s.slot > s.claimedAt && widenings.some((w) => w >= s.claimedAt && w <= s.slot);
    for (const call of calls) {
      now += call.gap;
      if (call.kind === 'limited') {
        const sent = slots
          .filter((s) => s.slot <= now && !voided(s))
          .map((s) => s.slot)
          .sort((a, b) => a - b);
        if (sent.length === 0) continue;
        const refused = sent[Math.max(0, sent.length - 1 - (call.back ?? 0))]!;
        const out = widenSchedule(schedule, now, SPACING, report(refused));
        schedule = out.schedule;
        if (out.widened) widenings.push(now);
        continue;
      }
      const claim =
        call.kind === 'create' ? claimLaneSlot(schedule, now, SPACING, CREATE) : claimSlot(schedule, now, SPACING);
      if (!claim) throw new Error('no limit was set, so a lane claim must succeed');
      schedule = claim.schedule;
      slots.push({ slot: claim.slot, claimedAt: now, spacing: claim.spacingMs, lane: call.kind === 'create' });
    }
    const kept = slots.filter((s) => !voided(s)).sort((a, b) => a.slot - b.slot);
    kept.forEach((s, i) => {
      expect(s.slot).toBeGreaterThanOrEqual(s.claimedAt);
      const before = kept[i - 1];
      if (before) expect(s.slot - before.slot).toBeGreaterThanOrEqual(Math.min(s.spacing, before.spacing));
    });
    const lane = kept.filter((s) => s.lane);
    lane.forEach((s, i) => {
      if (i > 0) expect(s.slot - lane[i - 1]!.slot).toBeGreaterThanOrEqual(CREATE.spacingMs);
    });
  };

  it('keeps every pair of sent slots the narrower of their spacings apart, and creates a lane spacing apart, for any mix of calls and rate limits', () => {
    const events = fc.array(
      fc.record({
        gap: fc.integer({ min: 0, max: 4_000 }),
        kind: fc.constantFrom<Event['kind']>('read', 'read', 'create', 'limited'),
        back: fc.integer({ min: 0, max: 3 }),
      }),
      { maxLength: 60 },
    );
    fc.assert(fc.property(events, expectSentSlotsSpaced), { numRuns: 300 });
  });

  it('regression (fast-check seed -1595091799): a slot claimed in the same millisecond as a widening, before it, is void', () => {
    // The second read's slot (T0 + 1.1 s, old timeline) was claimed at T0, the widening came at T0
    // too: left standing it would be 1 s from the new timeline's first slot (T0 + 2.1 s).
    expectSentSlotsSpaced([
      { gap: 0, kind: 'read' },
      { gap: 0, kind: 'read' },
      { gap: 0, kind: 'limited' },
      { gap: 0, kind: 'read' },
    ]);
  });

  it('restarts the timeline an old spacing after requests sent after the refused one (its answer came late)', () => {
    let schedule = EMPTY_SCHEDULE;
    for (let i = 0; i < 3; i += 1) schedule = claimSlot(schedule, T0, SPACING).schedule; // T0, T0 + 1.1 s, T0 + 2.2 s
    // The answer to the send at T0 is a 429 that arrives at T0 + 1.15 s: the send at T0 + 1.1 s is out.
    const out = widenSchedule(schedule, T0 + 1_150, SPACING, report(T0));
    // Not one new spacing after the refused send (T0 + 2.1 s, 1 s after the send at T0 + 1.1 s) but
    // an old spacing after now: the schedule cannot tell which slots before now were sent.
    expect(out.schedule.nextFree).toBe(T0 + 1_150 + SPACING);
    expect(claimSlot(out.schedule, T0 + 1_150, SPACING).slot).toBe(T0 + 2_250);
    expectSentSlotsSpaced([
      { gap: 0, kind: 'read' },
      { gap: 0, kind: 'read' },
      { gap: 1_150, kind: 'limited', back: 1 },
      { gap: 0, kind: 'read' },
    ]);
  });
});

describe.each([
  ['InMemoryPacingGate (one per process)', false],
  ['DynamoDbPacingGate (dynalite, one gate instance per caller, like Lambda instances)', true],
])('%s: adaptive interval', (_name, shared) => {
  let dynamo: LocalDynamo | undefined;
  let gate: () => PacingGate;
  let key: string;

  beforeAll(async () => {
    if (shared) {
      dynamo = await startDynalite({ tableName: 'relay' });
      gate = () => new DynamoDbPacingGate(dynamo!.doc, 'relay');
    } else {
      const one = new InMemoryPacingGate();
      gate = () => one;
    }
  });
  afterAll(async () => {
    await dynamo?.close();
  });
  beforeEach(() => {
    key = `adaptive-${Math.random().toString(16).slice(2)}`;
  });

  it("widens for every caller: a rate limit reported by one spaces the other's slots at the doubled interval", async () => {
    // Prepare
    const [a, b] = [gate(), gate()];
    expect(await a.acquire(key, SPACING, T0)).toBe(T0);
    // Act: a's request at T0 is refused
    const widening = await a.rateLimited(key, SPACING, T0 + 20, report(T0));
    // Assess: b, which saw nothing, gets slots 2.1 s apart from the refused send on
    expect(widening).toEqual({ previousMs: MIN, intervalMs: 2_000, widened: true });
    expect(await b.widenedAt(key)).toBe(T0 + 20);
    const slots = [
      await b.acquire(key, SPACING, T0 + 30),
      await b.acquire(key, SPACING, T0 + 30),
      await a.acquire(key, SPACING, T0 + 30),
    ];
    expect(slots).toEqual([T0 + 2_100, T0 + 4_200, T0 + 6_300]);
  });

  it('doubles up to 10 s through any instance, then narrows back to the minimum after a quiet minute', async () => {
    // Prepare: each refused request was sent after the previous widening
    const intervals: number[] = [];
    for (let i = 0; i < 5; i += 1) {
      const sentAt = T0 + i * 20_000;
      intervals.push((await gate().rateLimited(key, SPACING, sentAt + 10, report(sentAt))).intervalMs);
    }
    const lastReport = T0 + 4 * 20_000 + 10;
    // Assess: widened to the cap, in force for 60 s after the last report...
    expect(intervals).toEqual([2_000, 4_000, 8_000, 10_000, 10_000]);
    const quietAt = lastReport + 60_000;
    const inForce = [
      await gate().acquire(key, SPACING, quietAt - 1_000),
      await gate().acquire(key, SPACING, quietAt - 1_000),
    ];
    expect(inForce[1]! - inForce[0]!).toBe(10_100);
    // ...and after a quiet minute the minimum again, for every instance, in one step
    const idleLater = quietAt + 20_000;
    const narrow = [await gate().acquire(key, SPACING, idleLater), await gate().acquire(key, SPACING, idleLater)];
    expect(narrow).toEqual([idleLater, idleLater + SPACING]);
  });

  it('counts the requests in flight at a widening once: their answers do not double it again', async () => {
    // Prepare: requests sent at the old interval; the first refusal widens
    const first = await gate().rateLimited(key, SPACING, T0 + 1_110, report(T0 + 1_100));
    // Act: two more were sent before that widening and are refused after it
    const others = [
      await gate().rateLimited(key, SPACING, T0 + 1_120, report(T0 + 1_105)),
      await gate().rateLimited(key, SPACING, T0 + 1_130, report(T0)),
    ];
    // Assess
    expect(first.widened).toBe(true);
    expect(others.map((o) => [o.widened, o.intervalMs])).toEqual([
      [false, 2_000],
      [false, 2_000],
    ]);
    // Their reports restarted the quiet minute: still wide 60 s after the first.
    const a = await gate().acquire(key, SPACING, T0 + 61_120);
    expect((await gate().acquire(key, SPACING, T0 + 61_120)) - a).toBe(2_100);
  });

  it('keeps an idle key at the widened spacing (the one-write fast path stays closed while widened)', async () => {
    await gate().rateLimited(key, SPACING, T0 + 10, report(T0));
    // Long after the refused send, nothing queued: the slot is now, the next one a widened spacing later.
    const now = T0 + 30_000;
    expect([await gate().acquire(key, SPACING, now), await gate().acquire(key, SPACING, now)]).toEqual([
      now,
      now + 2_100,
    ]);
  });

  if (shared) {
    it('stores the widening in the pacing item, with a ttl past its quiet minute', async () => {
      await gate().rateLimited(key, SPACING, T0 + 10, report(T0));
      const { Item } = await dynamo!.doc.send(new GetCommand({ TableName: 'relay', Key: { pk: `PACE#${key}` } }));
      expect(Item).toEqual(
        expect.objectContaining({
          interval_ms: 2_000,
          extra_ms: 1_000,
          quiet_until: T0 + 10 + 60_000,
          widened_at: T0 + 10,
          next_free: T0 + 2_100,
        }),
      );
      expect(Item!.ttl).toBeGreaterThanOrEqual(Math.ceil((T0 + 60_010) / 1000) + 3600);
    });

    it("a widening whose answer was lost (the SDK retried it and failed its own condition) is one widening, reported as this caller's", async () => {
      // Prepare
      const lossy = lostAnswerClient(dynamo!);
      try {
        lossy.loseNext('UpdateItem', 1, (input) => JSON.stringify(input).includes('widen_token'));
        // Act
        const widening = await new DynamoDbPacingGate(lossy.doc, 'relay').rateLimited(
          key,
          SPACING,
          T0 + 10,
          report(T0),
        );
        // Assess
        expect(lossy.lost()).toBe(1);
        expect(widening).toEqual({ previousMs: MIN, intervalMs: 2_000, widened: true });
        const { Item } = await dynamo!.doc.send(new GetCommand({ TableName: 'relay', Key: { pk: `PACE#${key}` } }));
        expect(Item).toEqual(expect.objectContaining({ interval_ms: 2_000, rev: 1 }));
      } finally {
        lossy.close();
      }
    });
  }
});

/**
 * Virtual time for clients: `sleep` queues a timer; `run` lets every pending promise settle, then
 * fires the earliest timer, until the work is done. Only in-process gates (no real I/O to wait on).
 */
class VirtualClock {
  public now = T0;
  private timers: { at: number; resolve: () => void }[] = [];

  public readonly sleep = (ms: number): Promise<void> =>
    new Promise((resolve) => {
      this.timers.push({ at: this.now + ms, resolve });
    });

  public async run<T>(work: Promise<T>): Promise<T> {
    let done = false;
    const settled = work.finally(() => {
      done = true;
    });
    for (;;) {
      for (let i = 0; i < 20 && !done; i += 1) await new Promise((r) => setImmediate(r));
      if (done) return settled;
      this.timers.sort((a, b) => a.at - b.at);
      const next = this.timers.shift();
      if (!next) throw new Error('stuck: no timer pending');
      this.now = Math.max(this.now, next.at);
      next.resolve();
    }
  }
}

describe('HttpMarketplaceClient against a marketplace that allows one request per 2 s (virtual time)', () => {
  /** Runs `calls` concurrent reads from two clients sharing one gate; the marketplace refuses requests under 2 s apart with HTTP 429. */
  const scenario = async (maxIntervalMs: number, calls = 10) => {
    const clock = new VirtualClock();
    const sent: { at: number; status: number }[] = [];
    let lastAccepted = Number.NEGATIVE_INFINITY;
    const fetchFn = (async () => {
      const at = clock.now;
      const limited = at - lastAccepted < 2_000;
      if (!limited) lastAccepted = at;
      sent.push({ at, status: limited ? 429 : 200 });
      return new Response(limited ? '{"code":5}' : '{"code":0,"wallets":[]}', {
        status: limited ? 429 : 200,
        headers: { 'content-type': 'application/json' },
      });
    }) as typeof fetch;
    const widenings: { previousMs: number; intervalMs: number; endpoint: string }[] = [];
    const gate = new InMemoryPacingGate();
    const client = () =>
      new HttpMarketplaceClient({
        baseUrl: 'http://marketplace.invalid',
        apiKey: async () => 'k',
        pacing: gate,
        fetchFn,
        minIntervalMs: MIN,
        maxIntervalMs,
        now: () => clock.now,
        sleep: clock.sleep,
        random: () => 0.5,
        maxRateLimitRetries: 8,
        onWidened: (w) => widenings.push(w),
      });
    const clients = [client(), client()];
    const results = await clock.run(
      Promise.allSettled(Array.from({ length: calls }, (_, i) => clients[i % 2]!.listWallets())),
    );
    return { clock, sent, widenings, results, clients, makespan: clock.now - T0 };
  };

  it('widens once to 2 s, drops the 1 s slots already handed out, and draws at most 3 rate-limited answers', async () => {
    const { sent, widenings, results, makespan } = await scenario(10_000);
    expect(results.every((r) => r.status === 'fulfilled')).toBe(true);
    expect(sent.filter((s) => s.status === 429).length).toBeLessThanOrEqual(3);
    expect(widenings).toEqual([{ endpoint: 'wallets', previousMs: MIN, intervalMs: 2_000, widened: true }]);
    // 10 accepted requests need 9 gaps of 2 s at least; the widened pacing stays within 1.3× of that.
    expect(makespan / (9 * 2_000)).toBeLessThanOrEqual(1.3);
  });

  it('without widening (cap at the minimum) the same run draws a rate-limited answer for about every other request', async () => {
    const { sent, widenings } = await scenario(MIN);
    expect(widenings).toEqual([]);
    expect(sent.filter((s) => s.status === 429).length).toBeGreaterThan(3);
  });

  it("does not wait for a widened slot beyond the invocation's budget: a retryable rate limit, nothing sent", async () => {
    // Prepare: the interval is at 10 s and a slot is taken now, so the next one is 10.1 s away
    const gate = new InMemoryPacingGate();
    const intervals: number[] = [];
    for (let i = 0; i < 4; i += 1)
      intervals.push((await gate.rateLimited('k', SPACING, T0 + i, report(T0 + i))).intervalMs);
    expect(intervals.at(-1)).toBe(10_000);
    await gate.acquire('k', SPACING, T0 + 30_000);
    const requests: string[] = [];
    const client = new HttpMarketplaceClient({
      baseUrl: 'http://marketplace.invalid',
      apiKey: async () => 'k',
      keyId: 'k',
      pacing: gate,
      minIntervalMs: MIN,
      fetchFn: (async (url: URL) => {
        requests.push(String(url));
        return new Response('{"code":0,"wallets":[]}');
      }) as unknown as typeof fetch,
      now: () => T0 + 30_000,
      sleep: async () => {
        throw new Error('must not wait');
      },
      // 12 s left, 3 s reserve: 9 s, minus one attempt (1 s): 8 s of slot wait at most.
      remainingMs: () => 12_000,
      reserveMs: 3_000,
    });
    // Act
    const error = await client.listWallets().catch((e: unknown) => e);
    // Assess
    expect(error).toBeInstanceOf(MarketplaceRateLimitedError);
    expect(requests).toEqual([]);
  });

  it('regression (fast-check seed -1595091799): claims again a slot claimed in the same millisecond as a widening that came after it', async () => {
    // Prepare: another caller sent at T0; this client claims at T0 and gets T0 + 1.1 s (old timeline)
    const gate = new InMemoryPacingGate();
    expect(await gate.acquire('k', SPACING, T0)).toBe(T0);
    let now = T0;
    const sentAt: number[] = [];
    const client = new HttpMarketplaceClient({
      baseUrl: 'http://marketplace.invalid',
      apiKey: async () => 'k',
      keyId: 'k',
      pacing: gate,
      minIntervalMs: MIN,
      fetchFn: (async () => {
        sentAt.push(now);
        return new Response('{"code":0,"wallets":[]}');
      }) as unknown as typeof fetch,
      now: () => now,
      // While it waits, the send at T0 is refused and reported at T0 as well: a widening to 2 s.
      sleep: async (ms) => {
        if (sentAt.length === 0 && now === T0) await gate.rateLimited('k', SPACING, T0, report(T0));
        now += ms;
      },
    });
    // Act
    await client.listWallets();
    // Assess: not at T0 + 1.1 s (1 s before the new timeline's first slot) but on the new timeline
    expect(sentAt).toEqual([T0 + 2_100]);
  });

  it('after a quiet minute paces at the minimum again, and widens from it on the next rate limit', async () => {
    const { clock, widenings, clients } = await scenario(10_000, 4);
    clock.now += 61_000;
    await clock.run(Promise.all([clients[0]!.listWallets(), clients[1]!.listWallets()]));
    expect(widenings.map((w) => [w.previousMs, w.intervalMs])).toEqual([
      [MIN, 2_000],
      [MIN, 2_000],
    ]);
  });
});
