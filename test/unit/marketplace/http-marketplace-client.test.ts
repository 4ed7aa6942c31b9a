import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import type { MarketplaceError } from '../../../lambdas/domain/errors';
import {
  InvalidOrderRequestError,
  MarketplaceAuthError,
  MarketplaceDatabaseError,
  MarketplaceEndpointError,
  MarketplaceInvalidInputError,
  MarketplaceRateLimitedError,
  MarketplaceRejectedError,
  MarketplaceUnavailableError,
  OrderOutcomeUnknownError,
} from '../../../lambdas/domain/errors';
import { REJECTION_REASONS, type CreateOrderRequest } from '../../../lambdas/domain/marketplace-types';
import {
  HttpMarketplaceClient,
  type HttpMarketplaceClientOptions,
} from '../../../lambdas/marketplace/http-marketplace-client';
import { InMemoryPacingGate } from '../../../lambdas/marketplace/in-memory-pacing-gate';
import { apiKeyId } from '../../../lambdas/marketplace/key-id';
import { startSimulator, type MarketplaceSimulator } from '../../../local/simulator/marketplace-simulator';

const fixture = (name: string): string => readFileSync(join(__dirname, '../../fixtures/marketplace', name), 'utf8');
const jsonResponse = (body: string, status = 200) =>
  new Response(body, { status, headers: { 'content-type': 'application/json' } });

describe('HttpMarketplaceClient', () => {
  let sim: MarketplaceSimulator;
  let sleeps: number[];
  let errors: (number | 'network')[];

  beforeAll(async () => {
    // Most tests sleep in fake time, so the simulator's own rate limit is off here (see pacing tests).
    sim = await startSimulator({ rateLimit: false, readyDelayMs: 0 });
  });
  afterAll(() => sim.close());
  beforeEach(() => {
    sim.control.reset();
    sleeps = [];
    errors = [];
  });

  const client = (overrides: Partial<HttpMarketplaceClientOptions> = {}) =>
    new HttpMarketplaceClient({
      baseUrl: sim.url,
      apiKey: async () => sim.apiKey,
      pacing: new InMemoryPacingGate(),
      minIntervalMs: 0,
      timeoutMs: 2_000,
      sleep: async (ms) => {
        sleeps.push(ms);
      },
      random: () => 0.5,
      onError: (code) => errors.push(code),
      ...overrides,
    });

  const availableServer = () => {
    const server = sim.control
      .servers()
      .find((s) => s.online && !s.rented && s.gpu_array.length > 0 && s.allowed_coins.includes('NATIVE-Blockchain'));
    if (!server) throw new Error('no server');
    return server;
  };
  const orderFor = (serverId: number): CreateOrderRequest => ({
    renting_server: serverId,
    type: 'on-demand',
    currency: 'NATIVE-Blockchain',
    image: 'nvidia/cuda:12.4.1-base-ubuntu22.04',
    ports: { '22': 'tcp', '8888': 'http' },
    env: { JUPYTER_TOKEN: 'abc' },
    ssh_password: 'Secret123',
  });

  describe('endpoints (code 0)', () => {
    it('reads servers, wallets, orders and the spot market, and writes orders', async () => {
      // Prepare
      const c = client();
      const server = availableServer();
      // Act
      const servers = await c.listServers();
      const wallets = await c.listWallets();
      const { order_id } = await c.createOrder(orderFor(server.id));
      const active = await c.listOrders();
      await c.cancelOrder(order_id as number);
      const afterCancel = await c.listOrders();
      const completed = await c.listOrders({ returnCompleted: true });
      const market = await c.spotMarket(server.id);
      // Assess
      expect(servers.length).toBeGreaterThanOrEqual(30);
      expect(servers.find((s) => s.id === server.id)?.price.usd_per_hour.on_demand['NATIVE-Blockchain']).toBe(
        server.price.usd.on_demand_native,
      );
      expect(wallets.map((w) => w.name)).toContain('NATIVE-Blockchain');
      expect(typeof order_id).toBe('number');
      expect(active).toEqual([expect.objectContaining({ order_id, renting_server: server.id, status: 'running' })]);
      expect(afterCancel).toEqual([]);
      expect(completed).toEqual([expect.objectContaining({ order_id, status: 'expired' })]);
      expect(market).toEqual(expect.objectContaining({ offers: [] }));
      expect(errors).toEqual([]);
    });

    it('changes the price of a spot order', async () => {
      const c = client();
      const server = sim.control
        .servers()
        .find(
          (s) =>
            s.online &&
            !s.rented &&
            s.price.spot['NATIVE-Blockchain'] !== undefined &&
            s.allowed_coins.includes('NATIVE-Blockchain'),
        );
      const minimum = server?.price.spot['NATIVE-Blockchain'] as number;
      const { order_id } = await c.createOrder({
        ...orderFor(server?.id as number),
        type: 'spot',
        spotprice: minimum * 1.1,
      });
      await c.setSpotPrice(order_id as number, minimum * 1.3);
      expect(sim.control.orders()[0]?.price).toBeCloseTo(minimum * 1.3, 8);
    });

    it('sends the auth header on every call', async () => {
      const seen: (string | null)[] = [];
      const c = client({
        fetchFn: async (input, init) => {
          seen.push(new Headers(init?.headers).get('auth'));
          return fetch(input, init);
        },
      });
      await c.listWallets();
      await c.listOrders();
      expect(seen).toEqual([sim.apiKey, sim.apiKey]);
    });
  });

  describe('result codes', () => {
    it('maps code 1 to MarketplaceDatabaseError', async () => {
      sim.control.inject({ endpoint: 'wallets', kind: 'code', code: 1 });
      await expect(client().listWallets()).rejects.toBeInstanceOf(MarketplaceDatabaseError);
      expect(errors).toEqual([1]);
    });

    it('maps code 2 to MarketplaceInvalidInputError', async () => {
      const error = await client()
        .cancelOrder(987_654)
        .catch((e: unknown) => e);
      expect(error).toBeInstanceOf(MarketplaceInvalidInputError);
      expect((error as MarketplaceError).code).toBe(2);
    });

    it('maps code 3 to MarketplaceAuthError without leaking the key', async () => {
      const error = await client({ apiKey: async () => 'wrong-key-value' })
        .listServers()
        .catch((e: unknown) => e);
      expect(error).toBeInstanceOf(MarketplaceAuthError);
      expect((error as Error).name).toBe('MarketplaceAuthError');
      expect(String((error as Error).message)).not.toContain('wrong-key-value');
    });

    it('maps code 4 to MarketplaceEndpointError', async () => {
      await expect(client({ baseUrl: `${sim.url}/not-the-api` }).listServers()).rejects.toBeInstanceOf(
        MarketplaceEndpointError,
      );
      expect(errors).toEqual([4]);
    });

    it.each(REJECTION_REASONS)('maps code 6 %s to MarketplaceRejectedError with its reason', async (reason) => {
      sim.control.inject({ endpoint: 'create_order', kind: 'code', code: 6, error: reason });
      const error = await client()
        .createOrder(orderFor(availableServer().id))
        .catch((e: unknown) => e);
      expect(error).toBeInstanceOf(MarketplaceRejectedError);
      expect((error as MarketplaceRejectedError).reason).toBe(reason);
      expect((error as MarketplaceRejectedError).code).toBe(6);
    });

    it('reports real code 6 rejections from the simulator', async () => {
      const offline = sim.control
        .servers()
        .find((s) => !s.online && !s.rented && s.allowed_coins.includes('NATIVE-Blockchain'));
      const error = await client()
        .createOrder(orderFor(offline?.id as number))
        .catch((e: unknown) => e);
      expect((error as MarketplaceRejectedError).reason).toBe('server-offline');
    });
  });

  describe('code 5 backoff', () => {
    it('retries with full jitter and succeeds', async () => {
      // Prepare
      sim.control.inject({ endpoint: 'marketplace', kind: 'code', code: 5, times: 3 });
      const c = client({ baseBackoffMs: 1_000, random: () => 0.5 });
      // Act
      const servers = await c.listServers();
      // Assess
      expect(servers.length).toBeGreaterThan(0);
      expect(sleeps).toEqual([500, 1_000, 2_000]);
      expect(errors).toEqual([5, 5, 5]);
      expect(sim.control.counters().calls.marketplace).toBe(4);
    });

    it('draws each delay uniformly below the exponential cap', async () => {
      sim.control.inject({ endpoint: 'wallets', kind: 'code', code: 5, times: 4 });
      const draws = [0.99, 0, 0.25, 0.999];
      await client({ baseBackoffMs: 100, maxBackoffMs: 500, random: () => draws.shift() as number }).listWallets();
      expect(sleeps).toEqual([99, 0, 100, 499]);
    });

    it('throws MarketplaceRateLimitedError when retries are exhausted', async () => {
      sim.control.inject({ endpoint: 'wallets', kind: 'code', code: 5, times: 10 });
      const error = await client({ maxRateLimitRetries: 4 })
        .listWallets()
        .catch((e: unknown) => e);
      expect(error).toBeInstanceOf(MarketplaceRateLimitedError);
      expect(sleeps).toHaveLength(4);
      expect(sim.control.counters().calls.wallets).toBe(5);
    });

    it('retries create_order on code 5, since the request was not processed', async () => {
      sim.control.inject({ endpoint: 'create_order', kind: 'code', code: 5, times: 2 });
      const { order_id } = await client().createOrder(orderFor(availableServer().id));
      expect(typeof order_id).toBe('number');
      expect(sim.control.orders()).toHaveLength(1);
      expect(sim.control.counters().calls.create_order).toBe(3);
    });
  });

  describe('network failures', () => {
    it.each(['down', 'http500', 'malformed'] as const)('retries a GET after %s', async (kind) => {
      sim.control.inject({ endpoint: 'my_orders', kind, times: 2 });
      await expect(client().listOrders()).resolves.toEqual([]);
      expect(sim.control.counters().calls.my_orders).toBe(3);
      expect(errors).toEqual(['network', 'network']);
    });

    it('retries a GET that times out', async () => {
      sim.control.inject({ endpoint: 'wallets', kind: 'slow', delayMs: 30_000 });
      const wallets = await client({ timeoutMs: 1_000 }).listWallets();
      expect(wallets.length).toBeGreaterThan(0);
      expect(sim.control.counters().calls.wallets).toBe(2);
    });

    it('gives up on a GET with MarketplaceUnavailableError', async () => {
      sim.control.inject({ endpoint: 'wallets', kind: 'http500', times: 5 });
      await expect(client({ maxNetworkRetries: 2 }).listWallets()).rejects.toBeInstanceOf(MarketplaceUnavailableError);
      expect(sim.control.counters().calls.wallets).toBe(3);
    });

    it('does not retry a POST after a network failure', async () => {
      sim.control.inject({ endpoint: 'cancel_order', kind: 'down' });
      await expect(client().cancelOrder(1)).rejects.toBeInstanceOf(MarketplaceUnavailableError);
      expect(sim.control.counters().calls.cancel_order).toBe(1);
    });

    it('treats an answer that breaks the envelope as unavailable, without retrying', async () => {
      const c = client({ fetchFn: async () => jsonResponse('{"code":0,"servers":{"id":"six"}}') });
      await expect(c.listServers()).rejects.toBeInstanceOf(MarketplaceUnavailableError);
      expect(sleeps).toEqual([]);
    });

    it('leaves out a listing element that breaks the schema instead of failing the answer', async () => {
      const c = client({ fetchFn: async () => jsonResponse('{"code":0,"servers":[{"id":"six"}]}') });
      await expect(c.listServers()).resolves.toEqual([]);
      expect(sleeps).toEqual([]);
    });
  });

  describe('create_order is never retried blindly', () => {
    it.each([
      ['timeoutAfterSend (socket dropped after the order exists)', { kind: 'timeoutAfterSend' as const }, 1],
      ['timeoutAfterSend beyond the client timeout', { kind: 'timeoutAfterSend' as const, delayMs: 30_000 }, 1],
      ['malformed answer', { kind: 'malformed' as const }, 1],
      ['HTTP 500', { kind: 'http500' as const }, 0],
      ['connection dropped before processing', { kind: 'down' as const }, 0],
    ])('throws OrderOutcomeUnknownError on %s, after exactly one attempt', async (_label, fault, ordersCreated) => {
      // Prepare
      sim.control.inject({ endpoint: 'create_order', ...fault });
      // Act
      const error = await client({ timeoutMs: 1_000 })
        .createOrder(orderFor(availableServer().id))
        .catch((e: unknown) => e);
      // Assess
      expect(error).toBeInstanceOf(OrderOutcomeUnknownError);
      expect((error as Error).name).toBe('OrderOutcomeUnknownError');
      expect(sim.control.counters().calls.create_order).toBe(1);
      expect(sim.control.orders()).toHaveLength(ordersCreated);
      expect(sleeps).toEqual([]);
    });

    it('throws MarketplaceUnavailableError when the connection was refused (nothing was sent)', async () => {
      // Prepare: a port that was just freed
      const blocker = createServer();
      await new Promise<void>((resolve) => blocker.listen(0, '127.0.0.1', resolve));
      const { port } = blocker.address() as AddressInfo;
      await new Promise<void>((resolve) => blocker.close(() => resolve()));
      // Act
      const error = await client({ baseUrl: `http://127.0.0.1:${port}` })
        .createOrder(orderFor(1))
        .catch((e: unknown) => e);
      // Assess
      expect(error).toBeInstanceOf(MarketplaceUnavailableError);
    });

    it('returns order_id undefined when code 0 comes without one', async () => {
      const c = client({ fetchFn: async () => jsonResponse('{"code":0}') });
      await expect(c.createOrder(orderFor(1))).resolves.toEqual({ order_id: undefined });
    });

    it('throws OrderOutcomeUnknownError when code 0 comes with an unreadable order_id', async () => {
      const c = client({ fetchFn: async () => jsonResponse('{"code":0,"order_id":"12"}') });
      await expect(c.createOrder(orderFor(1))).rejects.toBeInstanceOf(OrderOutcomeUnknownError);
    });
  });

  describe('validation before sending', () => {
    it.each([
      ['a non-alphanumeric ssh_password', { ssh_password: 'pass word' }],
      ['an ssh_password longer than 32', { ssh_password: 'a'.repeat(33) }],
      ['a spot order without spotprice', { type: 'spot' }],
      ['a spot order with a non-positive spotprice', { type: 'spot', spotprice: 0 }],
      ['an unknown port protocol', { ports: { '22': 'udp' } }],
      ['a non-string env value', { env: { A: 1 } }],
    ])('refuses %s without calling the marketplace', async (_label, patch) => {
      const request = { ...orderFor(availableServer().id), ...patch } as unknown as CreateOrderRequest;
      const error = await client()
        .createOrder(request)
        .catch((e: unknown) => e);
      expect(error).toBeInstanceOf(InvalidOrderRequestError);
      expect((error as Error).message).not.toContain('pass word');
      expect(sim.control.counters().calls.create_order).toBeUndefined();
    });
  });

  describe('tolerance of extra fields', () => {
    it('keeps unlisted fields and reads listed ones from a recorded answer', async () => {
      // Prepare
      const bodies: Record<string, string> = {
        marketplace: fixture('marketplace.json'),
        my_orders: fixture('my_orders.json'),
        wallets: fixture('wallets.json'),
      };
      const c = client({
        fetchFn: async (input) =>
          jsonResponse(bodies[new URL(String(input)).pathname.split('/').pop() as string] as string),
      });
      // Act
      const [servers, orders, wallets] = await Promise.all([c.listServers(), c.listOrders(), c.listWallets()]);
      // Assess
      // The third element lists no GPU: not an offer the relay can use, so it is left out.
      expect(servers).toHaveLength(2);
      expect(servers[0]).toMatchObject({ id: 6, cuda_version: '12.4', net: { cc: 'DE' }, specs: { pcie_width: 16 } });
      expect(servers[1]?.price.spot).toEqual({});
      expect(servers[1]?.price.usd_per_hour.spot).toBeUndefined();
      expect(orders[0]).toMatchObject({
        order_id: 38,
        connection: { ports: { '22': 'tcp://n6.example.invalid:40022' } },
        spend: 0.1,
      });
      expect(orders[1]).toMatchObject({ order_id: 39, status: 'creating_order', started: 0, connection: {} });
      expect(wallets).toEqual([
        expect.objectContaining({ name: 'bitcoin', balance: 0.0031 }),
        expect.objectContaining({ name: 'NATIVE-Blockchain' }),
      ]);
    });

    it('reads an unreadable safety field the safe way: a server whose `rented` is not a boolean counts as rented', async () => {
      const broken = JSON.parse(fixture('marketplace.json')) as { servers: Record<string, unknown>[] };
      (broken.servers[0] as Record<string, unknown>).rented = 'no';
      const c = client({ fetchFn: async () => jsonResponse(JSON.stringify(broken)) });
      const servers = await c.listServers();
      expect(servers.find((s) => s.id === broken.servers[0]?.id)?.rented).toBe(true);
    });

    it('skips and reports an element it cannot use, by index, and keeps the rest of the answer', async () => {
      const broken = JSON.parse(fixture('marketplace.json')) as { servers: Record<string, unknown>[] };
      delete broken.servers[0]?.id;
      const skipped: [string, number, string][] = [];
      let reports = 0;
      const c = client({
        fetchFn: async () => jsonResponse(JSON.stringify(broken)),
        onSkipped: (endpoint, list) => {
          reports += 1;
          list.forEach((s) => skipped.push([endpoint, s.index, s.reason]));
        },
      });
      const servers = await c.listServers();
      expect(servers.map((s) => s.id)).not.toContain(undefined);
      expect(servers.length).toBe(1);
      expect(skipped).toEqual([
        ['marketplace', 0, expect.stringContaining('id')],
        ['marketplace', 2, expect.stringContaining('gpu_array')],
      ]);
      // One report per answer (the operator's log gets one line with the count, issue 28).
      expect(reports).toBe(1);
    });

    it('refuses an answer whose envelope is broken (no list at all)', async () => {
      const c = client({ fetchFn: async () => jsonResponse(JSON.stringify({ code: 0, servers: 'none' })) });
      await expect(c.listServers()).rejects.toBeInstanceOf(MarketplaceUnavailableError);
    });
  });

  describe('pacing', () => {
    it('acquires a slot under the API key id and sleeps until it', async () => {
      // Prepare
      const acquired: [string, number, number][] = [];
      let clock = 10_000;
      const c = client({
        minIntervalMs: 1_000,
        now: () => clock,
        pacing: {
          acquire: async (keyId, interval, now) => {
            acquired.push([keyId, interval, now]);
            return now + 750;
          },
          acquireInLane: async () => {
            throw new Error('not a lane call');
          },
          rateLimited: async () => {
            throw new Error('not rate limited');
          },
          widenedAt: async () => undefined,
        },
        sleep: async (ms) => {
          sleeps.push(ms);
          clock += ms;
        },
      });
      // Act
      await c.listWallets();
      // Assess
      expect(acquired).toEqual([[apiKeyId(sim.apiKey), 1_100, 10_000]]);
      expect(apiKeyId(sim.apiKey)).toMatch(/^[0-9a-f]{16}$/);
      expect(sleeps).toEqual([750]);
    });

    it('drops a slot that passed while the gate answered, and takes the next one', async () => {
      // Prepare: the first acquire takes 300 ms and returns a slot already 300 ms old
      let clock = 0;
      const slots = [0, 1_100];
      const c = client({
        minIntervalMs: 1_000,
        now: () => clock,
        pacing: {
          acquire: async () => {
            clock += 300;
            return slots.shift() as number;
          },
          acquireInLane: async () => {
            throw new Error('not a lane call');
          },
          rateLimited: async () => {
            throw new Error('not rate limited');
          },
          widenedAt: async () => undefined,
        },
        sleep: async (ms) => {
          sleeps.push(ms);
          clock += ms;
        },
      });
      // Act
      await c.listWallets();
      // Assess
      expect(sleeps).toEqual([500]);
      expect(slots).toEqual([]);
    });
  });
});
