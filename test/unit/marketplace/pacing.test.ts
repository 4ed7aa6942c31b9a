import { GetCommand } from '@aws-sdk/lib-dynamodb';
import { DynamoDbPacingGate } from '../../../lambdas/adapters/dynamodb/dynamodb-pacing-gate';
import { MarketplaceRateLimitedError } from '../../../lambdas/domain/errors';
import type { PacingGate } from '../../../lambdas/domain/ports';
import { HttpMarketplaceClient } from '../../../lambdas/marketplace/http-marketplace-client';
import { InMemoryPacingGate } from '../../../lambdas/marketplace/in-memory-pacing-gate';
import { startSimulator, type MarketplaceSimulator } from '../../../local/simulator/marketplace-simulator';
import { startDynalite, type LocalDynamo } from '../../helpers/dynalite';

// The simulator enforces 25 ms per key; clients pace at 60 ms. Whether the simulator, on its own
// event loop, also sees the requests 25 ms apart depends on scheduler jitter, so the spacing tests
// assert on the slots the gate hands out and let a jittered code 5 be retried.
const SIM_INTERVAL_MS = 25;
const CLIENT_INTERVAL_MS = 60;

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

/** Sorted slots are at least `intervalMs` apart. */
const expectSpaced = (slots: readonly number[], intervalMs: number): void => {
  const sorted = [...slots].sort((a, b) => a - b);
  const gaps = sorted.slice(1).map((t, i) => t - (sorted[i] as number));
  expect(gaps.filter((gap) => gap < intervalMs)).toEqual([]);
};

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

  const burst = (clients: HttpMarketplaceClient[]) =>
    Promise.allSettled([
      clients[0 % clients.length]!.listServers(),
      clients[1 % clients.length]!.listWallets(),
      clients[2 % clients.length]!.listOrders(),
      clients[3 % clients.length]!.listOrders({ returnCompleted: true }),
      clients[4 % clients.length]!.spotMarket(sim.control.servers()[0]!.id),
      clients[5 % clients.length]!.listWallets(),
    ]);

  it('gets code 5 answers without pacing (the limit is real)', async () => {
    const results = await burst([pacedClient(new InMemoryPacingGate(), 0)]);
    expect(sim.control.counters().rateLimited).toBeGreaterThan(0);
    expect(results.some((r) => r.status === 'rejected' && r.reason instanceof MarketplaceRateLimitedError)).toBe(true);
  });

  it('spaces concurrent callers sharing an in-memory gate: every send on its own slot, an interval apart', async () => {
    // Prepare: two clients (think two handlers in one process) share one gate
    const slots: number[] = [];
    const gate = recording(new InMemoryPacingGate(), slots);
    // Act
    const results = await burst([pacedClient(gate, CLIENT_INTERVAL_MS, 3), pacedClient(gate, CLIENT_INTERVAL_MS, 3)]);
    // Assess
    expect(results.map((r) => r.status)).toEqual(Array(6).fill('fulfilled'));
    expect(slots.length).toBeGreaterThanOrEqual(callsOf(sim));
    expectSpaced(slots, CLIENT_INTERVAL_MS);
    // Six calls processed; a code 5 from arrival jitter was retried, not lost.
    expect(callsOf(sim) - sim.control.counters().rateLimited).toBe(6);
  });

  it('spaces concurrent callers sharing the DynamoDB gate: every send on its own slot, an interval apart', async () => {
    // Prepare: separate gate instances, as in separate Lambda instances, sharing the table
    const slots: number[] = [];
    const clients = [0, 1, 2].map(() =>
      pacedClient(recording(new DynamoDbPacingGate(dynamo.doc, 'relay'), slots), CLIENT_INTERVAL_MS, 3),
    );
    // Act
    const results = await burst(clients);
    // Assess
    expect(results.map((r) => r.status)).toEqual(Array(6).fill('fulfilled'));
    expect(slots.length).toBeGreaterThanOrEqual(callsOf(sim));
    expectSpaced(slots, CLIENT_INTERVAL_MS);
    expect(callsOf(sim) - sim.control.counters().rateLimited).toBe(6);
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
