import { GetCommand } from '@aws-sdk/lib-dynamodb';
import { DynamoDbPacingGate } from '../../../lambdas/adapters/dynamodb-pacing-gate';
import { MarketplaceRateLimitedError } from '../../../lambdas/domain/errors';
import type { PacingGate } from '../../../lambdas/domain/ports';
import { HttpMarketplaceClient } from '../../../lambdas/marketplace/http-marketplace-client';
import { InMemoryPacingGate } from '../../../lambdas/marketplace/in-memory-pacing-gate';
import { startSimulator, type MarketplaceSimulator } from '../../../local/simulator/marketplace-simulator';
import { startDynalite, type LocalDynamo } from '../../helpers/dynalite';

// The simulator enforces 25 ms per key; clients pace at 60 ms, leaving a margin for arrival jitter.
const SIM_INTERVAL_MS = 25;
const CLIENT_INTERVAL_MS = 60;

const callsOf = (sim: MarketplaceSimulator): number => Object.values(sim.control.counters().calls).reduce((a, b) => a + b, 0);

describe('Pacing', () => {
  let sim: MarketplaceSimulator;
  let dynamo: LocalDynamo;

  beforeAll(async () => {
    [sim, dynamo] = await Promise.all([startSimulator({ minIntervalMs: SIM_INTERVAL_MS }), startDynalite({ tableName: 'relay' })]);
  });
  afterAll(async () => {
    await Promise.all([sim.close(), dynamo.close()]);
  });
  beforeEach(() => sim.control.reset());

  const pacedClient = (pacing: PacingGate, minIntervalMs = CLIENT_INTERVAL_MS) =>
    new HttpMarketplaceClient({ baseUrl: sim.url, apiKey: async () => sim.apiKey, pacing, minIntervalMs, maxRateLimitRetries: 0 });

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

  it('spaces concurrent callers sharing an in-memory gate: zero code 5 answers', async () => {
    // Prepare: two clients (think two handlers in one process) share one gate
    const gate = new InMemoryPacingGate();
    // Act
    const results = await burst([pacedClient(gate), pacedClient(gate)]);
    // Assess
    expect(results.map((r) => r.status)).toEqual(Array(6).fill('fulfilled'));
    expect(sim.control.counters().rateLimited).toBe(0);
    expect(callsOf(sim)).toBe(6);
  });

  it('spaces concurrent callers sharing the DynamoDB gate: zero code 5 answers', async () => {
    // Prepare: separate gate instances, as in separate Lambda instances, sharing the table
    const clients = [0, 1, 2].map(() => pacedClient(new DynamoDbPacingGate(dynamo.doc, 'relay')));
    // Act
    const results = await burst(clients);
    // Assess
    expect(results.map((r) => r.status)).toEqual(Array(6).fill('fulfilled'));
    expect(sim.control.counters().rateLimited).toBe(0);
    expect(callsOf(sim)).toBe(6);
  });

  describe('InMemoryPacingGate', () => {
    it('hands out slots one interval apart per key', async () => {
      const gate = new InMemoryPacingGate();
      const slots = await Promise.all([gate.acquire('k', 1000, 5000), gate.acquire('k', 1000, 5000), gate.acquire('other', 1000, 5000), gate.acquire('k', 1000, 9000)]);
      expect(slots).toEqual([5000, 6000, 5000, 9000]);
    });
  });

  describe('DynamoDbPacingGate', () => {
    it('hands out distinct slots one interval apart to concurrent gates', async () => {
      // Prepare
      const gates = Array.from({ length: 4 }, () => new DynamoDbPacingGate(dynamo.doc, 'relay'));
      const now = 1_700_000_000_000;
      // Act
      const slots = await Promise.all(Array.from({ length: 10 }, (_, i) => (gates[i % gates.length] as DynamoDbPacingGate).acquire('concurrent', 1000, now)));
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
