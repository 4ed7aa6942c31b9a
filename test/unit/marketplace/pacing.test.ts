import { GetCommand } from '@aws-sdk/lib-dynamodb';
import { DynamoDbPacingGate } from '../../../lambdas/adapters/dynamodb/dynamodb-pacing-gate';
import { MarketplaceRateLimitedError } from '../../../lambdas/domain/errors';
import type { PacingGate } from '../../../lambdas/domain/ports';
import { HttpMarketplaceClient } from '../../../lambdas/marketplace/http-marketplace-client';
import { InMemoryPacingGate } from '../../../lambdas/marketplace/in-memory-pacing-gate';
import { startSimulator, type MarketplaceSimulator } from '../../../local/simulator/marketplace-simulator';
import { startDynalite, type LocalDynamo } from '../../helpers/dynalite';

// The simulator enforces its interval on real time, so it can only show that the limit is real:
// 1 s (production's), which an unpaced burst of six requests cannot miss however loaded the machine.
// The spacing tests run the clients on virtual time (VirtualTime, below) with the simulator's limit
// off and assert on the send times the pacing computed: how far apart the simulator would see the
// requests depends on the scheduler, the send times do not.
const SIM_INTERVAL_MS = 1_000;
const CLIENT_INTERVAL_MS = 60;
/** The lateness margin the clients pace with on top of their interval (the gate's slots are INTERVAL + LATENESS apart). */
const LATENESS_MS = 5;
const T0 = 1_700_000_000_000;

const callsOf = (sim: MarketplaceSimulator): number =>
  Object.values(sim.control.counters().calls).reduce((a, b) => a + b, 0);

/** The gate, recording every slot it hands out. */
const recording = (gate: PacingGate, slots: number[]): PacingGate => ({
  acquire: async (...args) => {
    const slot = await gate.acquire(...args);
    slots.push(slot);
    return slot;
  },
  acquireInLane: async (...args) => {
    const slot = await gate.acquireInLane(...args);
    if (slot !== undefined) slots.push(slot);
    return slot;
  },
  rateLimited: (...args) => gate.rateLimited(...args),
  widenedAt: (...args) => gate.widenedAt(...args),
});

/** Gaps between consecutive times. */
const gapsOf = (times: readonly number[]): number[] => times.slice(1).map((t, i) => t - (times[i] as number));

/**
 * Virtual time for a fixed set of concurrent calls: `sleep` parks the caller on a timer, and the
 * clock jumps to the earliest timer only once every unfinished call is parked. Real I/O (the
 * simulator, dynalite) takes no virtual time however long it takes for real, so the send times are
 * exactly the ones the pacing computed. Each call sleeps at most once at a time (the client awaits
 * its sleeps), which is what makes "every call parked" countable.
 */
class VirtualTime {
  public now = T0;
  private readonly timers: { at: number; seq: number; resolve: () => void }[] = [];
  private unfinished = 0;
  private seq = 0;

  public readonly sleep = (ms: number): Promise<void> =>
    new Promise((resolve) => {
      this.timers.push({ at: this.now + ms, seq: this.seq++, resolve });
      this.advance();
    });

  public run<T>(calls: readonly (() => Promise<T>)[]): Promise<PromiseSettledResult<T>[]> {
    this.unfinished = calls.length;
    return Promise.allSettled(
      calls.map((call) =>
        call().finally(() => {
          this.unfinished -= 1;
          this.advance();
        }),
      ),
    );
  }

  /** Fires the earliest timer once every unfinished call waits on one. */
  private advance(): void {
    if (this.unfinished === 0 || this.timers.length < this.unfinished) return;
    this.timers.sort((a, b) => a.at - b.at || a.seq - b.seq);
    const next = this.timers.shift() as { at: number; resolve: () => void };
    this.now = Math.max(this.now, next.at);
    next.resolve();
  }
}

describe('Pacing', () => {
  let sim: MarketplaceSimulator;
  let dynamo: LocalDynamo;

  beforeAll(async () => {
    [sim, dynamo] = await Promise.all([
      startSimulator({ minIntervalMs: SIM_INTERVAL_MS }),
      startDynalite({ tableName: 'relay' }),
    ]);
  });
  afterAll(async () => {
    await Promise.all([sim.close(), dynamo.close()]);
  });
  beforeEach(() => sim.control.reset());

  const pacedClient = (pacing: PacingGate, minIntervalMs = CLIENT_INTERVAL_MS, maxRateLimitRetries = 0) =>
    new HttpMarketplaceClient({
      baseUrl: sim.url,
      apiKey: async () => sim.apiKey,
      pacing,
      minIntervalMs,
      maxRateLimitRetries,
      baseBackoffMs: 20,
    });

  /**
   * A client on `time` pacing at CLIENT_INTERVAL_MS: each request's virtual send time goes to `sends`,
   * the request itself to the simulator. A code 5 is not retried.
   */
  const virtualClient = (pacing: PacingGate, time: VirtualTime, sends: number[]) =>
    new HttpMarketplaceClient({
      baseUrl: sim.url,
      apiKey: async () => sim.apiKey,
      pacing,
      minIntervalMs: CLIENT_INTERVAL_MS,
      maxLatenessMs: LATENESS_MS,
      maxRateLimitRetries: 0,
      now: () => time.now,
      sleep: time.sleep,
      fetchFn: (...args) => {
        sends.push(time.now);
        return globalThis.fetch(...args);
      },
    });

  /** Six reads spread over the clients, not yet started. */
  const burstCalls = (clients: HttpMarketplaceClient[]): (() => Promise<unknown>)[] => [
    () => clients[0 % clients.length]!.listServers(),
    () => clients[1 % clients.length]!.listWallets(),
    () => clients[2 % clients.length]!.listOrders(),
    () => clients[3 % clients.length]!.listOrders({ returnCompleted: true }),
    () => clients[4 % clients.length]!.spotMarket(sim.control.servers()[0]!.id),
    () => clients[5 % clients.length]!.listWallets(),
  ];
  const burst = (clients: HttpMarketplaceClient[]) => Promise.allSettled(burstCalls(clients).map((call) => call()));

  /** The six sends one gate slot apart from T0: CLIENT_INTERVAL_MS plus the lateness margin. */
  const SCHEDULE = Array.from({ length: 6 }, (_, i) => T0 + i * (CLIENT_INTERVAL_MS + LATENESS_MS));

  it('gets code 5 answers without pacing (the limit is real)', async () => {
    const results = await burst([pacedClient(new InMemoryPacingGate(), 0)]);
    expect(sim.control.counters().rateLimited).toBeGreaterThan(0);
    expect(results.some((r) => r.status === 'rejected' && r.reason instanceof MarketplaceRateLimitedError)).toBe(true);
  });

  it('spaces concurrent callers sharing an in-memory gate: every send on its own slot, an interval apart', async () => {
    // Prepare: two clients (think two handlers in one process) share one gate, on virtual time; the
    // spacing is checked on their send times, so the simulator's real-time limit is off
    sim.control.setRateLimit(false);
    const time = new VirtualTime();
    const slots: number[] = [];
    const sends: number[] = [];
    const gate = recording(new InMemoryPacingGate(), slots);
    // Act
    const results = await time.run(burstCalls([virtualClient(gate, time, sends), virtualClient(gate, time, sends)]));
    // Assess
    expect(results.map((r) => r.status)).toEqual(Array(6).fill('fulfilled'));
    expect(gapsOf(sends).filter((gap) => gap < CLIENT_INTERVAL_MS)).toEqual([]);
    expect(sends).toEqual([...slots].sort((a, b) => a - b));
    expect(sends).toEqual(SCHEDULE);
    expect(callsOf(sim)).toBe(6);
  });

  it('spaces concurrent callers sharing the DynamoDB gate: every send on its own slot, an interval apart', async () => {
    // Prepare: separate gate instances, as in separate Lambda instances, sharing the table, on virtual time
    sim.control.setRateLimit(false);
    const time = new VirtualTime();
    const slots: number[] = [];
    const sends: number[] = [];
    const clients = [0, 1, 2].map(() =>
      virtualClient(recording(new DynamoDbPacingGate(dynamo.doc, 'relay'), slots), time, sends),
    );
    // Act
    const results = await time.run(burstCalls(clients));
    // Assess
    expect(results.map((r) => r.status)).toEqual(Array(6).fill('fulfilled'));
    expect(gapsOf(sends).filter((gap) => gap < CLIENT_INTERVAL_MS)).toEqual([]);
    expect(sends).toEqual([...slots].sort((a, b) => a - b));
    expect(sends).toEqual(SCHEDULE);
    expect(callsOf(sim)).toBe(6);
  });

  describe('InMemoryPacingGate', () => {
    it('hands out slots one interval apart per key', async () => {
      const gate = new InMemoryPacingGate();
      const slots = await Promise.all([
        gate.acquire('k', 1000, 5000),
        gate.acquire('k', 1000, 5000),
        gate.acquire('other', 1000, 5000),
        gate.acquire('k', 1000, 9000),
      ]);
      expect(slots).toEqual([5000, 6000, 5000, 9000]);
    });
  });

  describe('DynamoDbPacingGate', () => {
    it('hands out distinct slots one interval apart to concurrent gates', async () => {
      // Prepare
      const gates = Array.from({ length: 4 }, () => new DynamoDbPacingGate(dynamo.doc, 'relay'));
      const now = 1_700_000_000_000;
      // Act
      const slots = await Promise.all(
        Array.from({ length: 10 }, (_, i) =>
          (gates[i % gates.length] as DynamoDbPacingGate).acquire('concurrent', 1000, now),
        ),
      );
      // Assess
      expect([...slots].sort((a, b) => a - b)).toEqual(Array.from({ length: 10 }, (_, i) => now + i * 1000));
    });

    it('gives the caller its own time when the key is idle, and stores a ttl', async () => {
      // Prepare
      const gate = new DynamoDbPacingGate(dynamo.doc, 'relay');
      // Act
      const first = await gate.acquire('idle', 1000, 50_000);
      const later = await gate.acquire('idle', 1000, 80_000);
      const { Item } = await dynamo.doc.send(new GetCommand({ TableName: 'relay', Key: { pk: 'PACE#idle' } }));
      // Assess
      expect([first, later]).toEqual([50_000, 80_000]);
      expect(Item).toEqual(expect.objectContaining({ pk: 'PACE#idle', next_free: 81_000, ttl: 81 + 3600 }));
    });
  });
});
