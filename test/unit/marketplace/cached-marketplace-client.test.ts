import { GetCommand } from '@aws-sdk/lib-dynamodb';
import { DynamoDbReadCache, MAX_CACHED_BYTES } from '../../../lambdas/adapters/dynamodb/dynamodb-read-cache';
import { MarketplaceUnavailableError, OrderOutcomeUnknownError } from '../../../lambdas/domain/errors';
import type { CreateOrderRequest, Order, Server } from '../../../lambdas/domain/marketplace-types';
import type { MarketplaceClient } from '../../../lambdas/domain/ports';
import { CachedMarketplaceClient } from '../../../lambdas/marketplace/cached-marketplace-client';
import { InMemoryReadCache, type ReadCache } from '../../../lambdas/marketplace/read-cache';
import { startDynalite, type LocalDynamo } from '../../helpers/dynalite';

/** A fake marketplace that counts calls and answers with a version number, so staleness shows. */
class FakeMarketplace implements MarketplaceClient {
  public calls: Record<string, number> = {};
  public version = 1;
  public failCreate: Error | undefined;
  public gate: Promise<void> | undefined;

  private count(name: string) {
    this.calls[name] = (this.calls[name] ?? 0) + 1;
  }

  public async listServers(): Promise<readonly Server[]> {
    this.count('listServers');
    await this.gate;
    return [{ id: this.version } as Server];
  }
  public async listWallets() {
    this.count('listWallets');
    return [{ name: 'bitcoin', balance: 1 }];
  }
  public async createOrder(_request: CreateOrderRequest) {
    this.count('createOrder');
    if (this.failCreate) throw this.failCreate;
    this.version += 1;
    return { order_id: 7 };
  }
  public async listOrders(options?: { returnCompleted?: boolean }): Promise<readonly Order[]> {
    this.count(options?.returnCompleted ? 'listOrdersCompleted' : 'listOrders');
    await this.gate;
    return [{ order_id: this.version } as Order];
  }
  public async cancelOrder() {
    this.count('cancelOrder');
    this.version += 1;
  }
  public async setSpotPrice() {
    this.count('setSpotPrice');
    this.version += 1;
  }
  public async spotMarket() {
    this.count('spotMarket');
    return { offers: [] };
  }
}

const request = { renting_server: 1, type: 'on-demand', currency: 'bitcoin', image: 'x' } as const;

describe('CachedMarketplaceClient', () => {
  let clock: number;
  let inner: FakeMarketplace;
  const build = (cache: ReadCache = new InMemoryReadCache(), onCacheError?: (e: unknown) => void) =>
    new CachedMarketplaceClient({ inner, cache, maxAgeMs: 5_000, now: () => clock, onCacheError });

  beforeEach(() => {
    clock = 1_000_000;
    inner = new FakeMarketplace();
  });

  it('serves listServers from the cache while younger than maxAgeMs', async () => {
    // Prepare
    const client = build();
    // Act
    const first = await client.listServers();
    inner.version = 2;
    clock += 5_000;
    const cached = await client.listServers();
    clock += 1;
    const fresh = await client.listServers();
    // Assess
    expect(first).toEqual([{ id: 1 }]);
    expect(cached).toEqual([{ id: 1 }]);
    expect(fresh).toEqual([{ id: 2 }]);
    expect(inner.calls.listServers).toBe(2);
  });

  it('shares the cache between client instances (as Lambda instances share DynamoDB)', async () => {
    const cache = new InMemoryReadCache();
    await build(cache).listOrders();
    await build(cache).listOrders();
    expect(inner.calls.listOrders).toBe(1);
  });

  it('joins concurrent misses into one call', async () => {
    const client = build();
    const results = await Promise.all([client.listServers(), client.listServers(), client.listServers()]);
    expect(results).toEqual([[{ id: 1 }], [{ id: 1 }], [{ id: 1 }]]);
    expect(inner.calls.listServers).toBe(1);
  });

  it('passes completed-order listings and everything else through', async () => {
    const client = build();
    await client.listOrders({ returnCompleted: true });
    await client.listOrders({ returnCompleted: true });
    await client.listWallets();
    await client.listWallets();
    await client.spotMarket(1);
    await client.setSpotPrice(1, 2);
    expect(inner.calls).toEqual({ listOrdersCompleted: 2, listWallets: 2, spotMarket: 1, setSpotPrice: 1 });
  });

  it.each([
    ['createOrder', (c: CachedMarketplaceClient) => c.createOrder(request)],
    ['cancelOrder', (c: CachedMarketplaceClient) => c.cancelOrder(1)],
    ['setSpotPrice', (c: CachedMarketplaceClient) => c.setSpotPrice(1, 2)],
  ])('invalidates active orders after %s', async (_name, write) => {
    // Prepare
    const client = build();
    await client.listOrders();
    // Act
    await write(client);
    const after = await client.listOrders();
    // Assess
    expect(after).toEqual([{ order_id: 2 }]);
    expect(inner.calls.listOrders).toBe(2);
  });

  it('invalidates active orders even when createOrder fails with an unknown outcome', async () => {
    const client = build();
    await client.listOrders();
    inner.failCreate = new OrderOutcomeUnknownError('timeout');
    await expect(client.createOrder(request)).rejects.toBeInstanceOf(OrderOutcomeUnknownError);
    await client.listOrders();
    expect(inner.calls.listOrders).toBe(2);
  });

  it('does not store a read that started before an invalidation', async () => {
    // Prepare: a slow listOrders is in flight when an order is created
    const client = build();
    let release: () => void = () => undefined;
    inner.gate = new Promise<void>((resolve) => {
      release = resolve;
    });
    const slowRead = client.listOrders();
    await new Promise((r) => setImmediate(r));
    // Act
    clock += 10;
    inner.gate = undefined;
    await client.createOrder(request);
    release();
    await slowRead;
    const next = await client.listOrders();
    // Assess
    expect(next).toEqual([{ order_id: 2 }]);
    expect(inner.calls.listOrders).toBe(2);
  });

  it('falls back to the marketplace when the cache fails', async () => {
    // Prepare
    const broken: ReadCache = {
      get: async () => {
        throw new Error('dynamo down');
      },
      put: async () => {
        throw new Error('dynamo down');
      },
      invalidate: async () => {
        throw new Error('dynamo down');
      },
    };
    const cacheErrors: unknown[] = [];
    const client = build(broken, (e) => cacheErrors.push(e));
    // Act
    const servers = await client.listServers();
    await client.createOrder(request);
    // Assess
    expect(servers).toEqual([{ id: 1 }]);
    expect(cacheErrors).toHaveLength(3);
  });

  it('propagates marketplace errors without caching them', async () => {
    const failing = new FakeMarketplace();
    failing.listServers = async () => {
      throw new MarketplaceUnavailableError('down');
    };
    const client = new CachedMarketplaceClient({
      inner: failing,
      cache: new InMemoryReadCache(),
      maxAgeMs: 5_000,
      now: () => clock,
    });
    await expect(client.listServers()).rejects.toBeInstanceOf(MarketplaceUnavailableError);
    await expect(client.listServers()).rejects.toBeInstanceOf(MarketplaceUnavailableError);
  });
});

describe('DynamoDbReadCache', () => {
  let dynamo: LocalDynamo;
  let cache: DynamoDbReadCache;

  beforeAll(async () => {
    dynamo = await startDynalite({ tableName: 'relay' });
    cache = new DynamoDbReadCache(dynamo.doc, 'relay');
  });
  afterAll(() => dynamo.close());

  it('stores a value as a JSON string with a ttl and serves it until maxAgeMs', async () => {
    // Act
    await cache.put('servers-a', [{ id: 1, extra: 'x' }], 10_000, 65);
    const item = await dynamo.doc.send(new GetCommand({ TableName: 'relay', Key: { pk: 'CACHE#servers-a' } }));
    // Assess
    expect(item.Item).toEqual({
      pk: 'CACHE#servers-a',
      value: '[{"id":1,"extra":"x"}]',
      read_at: 10_000,
      ttl: 10 + 65,
    });
    expect(await cache.get('servers-a', 5_000, 15_000)).toEqual([{ id: 1, extra: 'x' }]);
    expect(await cache.get('servers-a', 5_000, 15_001)).toBeUndefined();
    expect(await cache.get('never-stored', 5_000, 15_000)).toBeUndefined();
  });

  it('never replaces a fresher value with an older read', async () => {
    await cache.put('orders-b', ['new'], 20_000, 60);
    await cache.put('orders-b', ['old'], 19_000, 60);
    expect(await cache.get('orders-b', 5_000, 20_000)).toEqual(['new']);
  });

  it('drops reads that started at or before an invalidation', async () => {
    // Prepare
    await cache.put('orders-c', ['before'], 30_000, 60);
    // Act
    await cache.invalidate('orders-c', 31_000);
    const right = await cache.get('orders-c', 5_000, 31_000);
    await cache.put('orders-c', ['stale'], 31_000, 60);
    const stale = await cache.get('orders-c', 5_000, 31_500);
    await cache.put('orders-c', ['fresh'], 31_001, 60);
    // Assess
    expect(right).toBeUndefined();
    expect(stale).toBeUndefined();
    expect(await cache.get('orders-c', 5_000, 31_500)).toEqual(['fresh']);
  });

  it('skips values too large for one item', async () => {
    await cache.put('big', 'x'.repeat(MAX_CACHED_BYTES + 1), 40_000, 60);
    expect(await cache.get('big', 5_000, 40_000)).toBeUndefined();
  });

  it('serves many CachedMarketplaceClients with one marketplace read', async () => {
    const inner = new FakeMarketplace();
    const clients = [1, 2, 3].map(
      () => new CachedMarketplaceClient({ inner, cache, maxAgeMs: 5_000, now: () => 50_000 }),
    );
    const first = await clients[0]!.listServers();
    const rest = await Promise.all(clients.slice(1).map((c) => c.listServers()));
    expect(rest).toEqual([first, first]);
    expect(inner.calls.listServers).toBe(1);
  });
});
