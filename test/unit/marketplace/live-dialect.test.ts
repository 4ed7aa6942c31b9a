/**
 * Production's answers (test/fixtures/marketplace/live-v1/, SOURCES.md) replayed through the client,
 * and the transport as production behaves (HTTP 401 / 429 / plain-text errors, User-Agent, budget).
 */
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import {
  MarketplaceAuthError,
  MarketplaceRateLimitedError,
  MarketplaceRejectedError,
  MarketplaceUnavailableError,
  OrderOutcomeUnknownError,
} from '../../../lambdas/domain/errors';
import { REJECTION_REASONS, type CreateOrderRequest } from '../../../lambdas/domain/marketplace-types';
import { findMatchingServer } from '../../../lambdas/domain/hosts/matching';
import {
  HttpMarketplaceClient,
  USER_AGENT,
  type HttpMarketplaceClientOptions,
} from '../../../lambdas/marketplace/http-marketplace-client';
import { InMemoryPacingGate } from '../../../lambdas/marketplace/in-memory-pacing-gate';
import { version } from '../../../package.json';

const LIVE_DIR = join(__dirname, '../../fixtures/marketplace/live-v1');
const sample = (name: string): string => readFileSync(join(LIVE_DIR, name), 'utf8');
const answer = (body: string, status = 200, type = 'application/json') =>
  new Response(body, { status, headers: { 'content-type': type } });

const ORDER: CreateOrderRequest = {
  renting_server: 31337,
  type: 'spot',
  currency: 'CLORE-Blockchain',
  image: 'cloreai/ubuntu',
  spotprice: 1540,
};

interface Harness {
  readonly client: HttpMarketplaceClient;
  readonly requests: { url: string; headers: Headers }[];
  readonly sleeps: number[];
}

/** A client whose fetch answers from `route` (by endpoint name) and records every request. */
const harness = (
  route: (endpoint: string, n: number) => Response,
  overrides: Partial<HttpMarketplaceClientOptions> = {},
): Harness => {
  const requests: Harness['requests'] = [];
  const sleeps: number[] = [];
  const client = new HttpMarketplaceClient({
    baseUrl: 'https://marketplace.test',
    apiKey: async () => 'live-key',
    pacing: new InMemoryPacingGate(),
    minIntervalMs: 0,
    createIntervalMs: 0,
    sleep: async (ms) => {
      sleeps.push(ms);
    },
    random: () => 0.5,
    fetchFn: async (input, init) => {
      const url = String(input);
      requests.push({ url, headers: new Headers(init?.headers) });
      const endpoint = new URL(url).pathname.split('/').pop() as string;
      return route(endpoint, requests.length);
    },
    ...overrides,
  });
  return { client, requests, sleeps };
};

describe('live-v1 samples replayed through the client', () => {
  const files = readdirSync(LIVE_DIR)
    .filter((f) => f.endsWith('.json'))
    .sort();

  it('covers every sample file', () => {
    // Each sample below is replayed by name; a new sample fails here until it is replayed too.
    expect(files).toEqual([
      'cancel_order.json',
      'create_order-too-low-price.json',
      'create_order.json',
      'marketplace-no-spot.json',
      'marketplace.json',
      'my_orders-empty.json',
      'my_orders-minimal.json',
      'my_orders.json',
      'rate-limited-http429.json',
      'set_spot_price-can-lower-every-600-seconds.json',
      'set_spot_price-exceeded-max-step.json',
      'set_spot_price.json',
      'spot_marketplace.json',
      'wallets.json',
    ]);
  });

  it('marketplace.json: trimmed GPU names, USD on-demand price per coin turned from per day into per hour, positive spot prices', async () => {
    const { client } = harness(() => answer(sample('marketplace.json')));
    const [server] = await client.listServers();
    expect(server).toMatchObject({
      id: 31337,
      gpu_array: ['RTX 4090', 'RTX 4090'],
      allowed_coins: ['CLORE-Blockchain', 'bitcoin', 'USD-Blockchain'],
      price: {
        // The marketplace's own unit, as the bid is sent.
        spot: { 'CLORE-Blockchain': 1400, bitcoin: 4.31e-5 },
        // Production's $5.9/day etc., per hour (6 significant digits).
        usd_per_hour: {
          on_demand: { 'CLORE-Blockchain': 0.245833, 'USD-Blockchain': 0.254167, bitcoin: 0.252083 },
          spot: 0.116667,
        },
      },
    });
    // The domain matches it: spot under the cap in CLORE, on-demand compared with on_demand_clore (USD/h).
    const servers = await client.listServers();
    expect(
      findMatchingServer(servers, {
        gpu_type: 'RTX 4090',
        currency: 'CLORE-Blockchain',
        use_spot: true,
        max_price: 0.12,
      })?.id,
    ).toBe(31337);
    expect(
      findMatchingServer(servers, {
        gpu_type: 'RTX 4090',
        currency: 'CLORE-Blockchain',
        use_spot: true,
        max_price: 0.11,
      }),
    ).toBeUndefined();
    expect(
      findMatchingServer(servers, {
        gpu_type: 'rtx 4090',
        currency: 'CLORE-Blockchain',
        use_spot: false,
        max_price: 0.25,
      })?.id,
    ).toBe(31337);
    expect(
      findMatchingServer(servers, {
        gpu_type: 'RTX 4090',
        currency: 'CLORE-Blockchain',
        use_spot: false,
        max_price: 0.245,
      }),
    ).toBeUndefined();
  });

  it('marketplace-no-spot.json: usd.spot 0 means no spot price; the server is an on-demand candidate only', async () => {
    const { client } = harness(() => answer(sample('marketplace-no-spot.json')));
    const servers = await client.listServers();
    expect(servers[0]?.price.usd_per_hour.spot).toBeUndefined();
    expect(servers[0]?.price.spot).toEqual({});
    expect(
      findMatchingServer(servers, { gpu_type: 'RTX 4090', currency: 'CLORE-Blockchain', use_spot: true }),
    ).toBeUndefined();
    expect(
      findMatchingServer(servers, { gpu_type: 'RTX 4090', currency: 'CLORE-Blockchain', use_spot: false })?.id,
    ).toBe(31338);
  });

  it.each([
    [
      'my_orders.json',
      {
        order_id: 58991,
        renting_server: 31337,
        type: 'spot',
        status: 'running',
        created: 1714608000,
        connection: {
          ssh: 'ssh root@n1.msk.cloreai.ru -p 1277',
          ports: { '22': 'tcp://n1.msk.cloreai.ru:1277', '8888': 'https://2i451z7dttj3i.cloreai.ru' },
        },
      },
    ],
    [
      'my_orders-minimal.json',
      {
        order_id: 123,
        renting_server: 456,
        type: 'on-demand',
        status: 'running',
        created: 1714608000,
        connection: { ssh: 'ssh root@node.example.com -p 12022', ports: { '22': 'tcp://node.example.com:12022' } },
      },
    ],
  ])('%s: an order without status reads as the domain order, ready per the live contract', async (file, expected) => {
    const { client } = harness(() => answer(sample(file)));
    expect(await client.listOrders()).toEqual([expect.objectContaining(expected)]);
  });

  it('my_orders-empty.json: no orders', async () => {
    const { client } = harness(() => answer(sample('my_orders-empty.json')));
    expect(await client.listOrders()).toEqual([]);
  });

  it('create_order.json: {code: 0} without an order id (the workflow reconciles through my_orders)', async () => {
    const { client } = harness(() => answer(sample('create_order.json')));
    expect(await client.createOrder(ORDER)).toEqual({ order_id: undefined });
  });

  it('create_order-too-low-price.json: the refusal keeps min_price in the error the task reports', async () => {
    const { client } = harness(() => answer(sample('create_order-too-low-price.json')));
    const error = await client.createOrder(ORDER).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(MarketplaceRejectedError);
    expect(error).toMatchObject({ reason: 'too_low_price', details: { min_price: 3.2 } });
    expect((error as Error).message).toBe('marketplace rejected the request: too_low_price (min_price 3.2)');
  });

  it.each([
    ['set_spot_price-exceeded-max-step.json', 'exceeded_max_step', { max_step: 1e-6 }],
    ['set_spot_price-can-lower-every-600-seconds.json', 'can_lower_every_600_seconds', { time_to_lowering: 412 }],
  ])('%s: a typed refusal reason with its numbers', async (file, reason, details) => {
    const { client } = harness(() => answer(sample(file)));
    const error = await client.setSpotPrice(58991, 1000).catch((e: unknown) => e);
    expect(REJECTION_REASONS).toContain(reason);
    expect(error).toMatchObject({ name: 'MarketplaceRejectedError', reason, details });
  });

  it.each(['set_spot_price.json', 'cancel_order.json'])('%s: code 0 is success', async (file) => {
    const { client } = harness(() => answer(sample(file)));
    await expect(
      file.startsWith('cancel') ? client.cancelOrder(58991) : client.setSpotPrice(58991, 1500),
    ).resolves.toBeUndefined();
  });

  it('spot_marketplace.json: the market is passed through', async () => {
    const { client } = harness(() => answer(sample('spot_marketplace.json')));
    expect(await client.spotMarket(31337)).toMatchObject({
      offers: expect.arrayContaining([expect.objectContaining({ offer_id: 58991, my: true })]),
    });
  });

  it('wallets.json: CLORE-Blockchain among the wallets', async () => {
    const { client } = harness(() => answer(sample('wallets.json')));
    expect((await client.listWallets()).map((w) => w.name)).toEqual(['CLORE-Blockchain', 'bitcoin', 'USD-Blockchain']);
  });

  it('rate-limited-http429.json: HTTP 429 with code 5 is backed off and retried, even for create_order', async () => {
    const { client, requests, sleeps } = harness((_e, n) =>
      n <= 2 ? answer(sample('rate-limited-http429.json'), 429) : answer(sample('create_order.json')),
    );
    expect(await client.createOrder(ORDER)).toEqual({ order_id: undefined });
    expect(requests).toHaveLength(3);
    expect(sleeps).toEqual([500, 1_000]);
  });
});

describe('one bad element never sinks an answer', () => {
  it('reads an older-style server without gpu_array from specs.gpu, one without price.usd, skips one without GPUs, and reports the skip by index', async () => {
    const live = JSON.parse(sample('marketplace.json')) as { servers: Record<string, unknown>[] };
    const base = live.servers[0]!;
    const noGpuArray = { ...base, id: 1 } as Record<string, unknown>;
    delete noGpuArray.gpu_array;
    const noGpus = { ...noGpuArray, id: 3, specs: { gpu: '' } };
    const noUsd = { ...base, id: 2, price: { on_demand: { 'CLORE-Blockchain': 2000 }, spot: {} } };
    const skipped: [string, number][] = [];
    const { client } = harness(
      () => answer(JSON.stringify({ code: 0, servers: [noGpuArray, noUsd, noGpus, base, 'junk'] })),
      {
        onSkipped: (endpoint, list) => list.forEach((s) => skipped.push([endpoint, s.index])),
      },
    );
    const servers = await client.listServers();
    expect(servers.map((s) => s.id)).toEqual([1, 2, 31337]);
    expect(servers[0]?.gpu_array).toEqual(['NVIDIA GeForce RTX 4090', 'NVIDIA GeForce RTX 4090']);
    expect(servers[1]?.price.usd_per_hour).toEqual({ on_demand: {} });
    expect(skipped).toEqual([
      ['marketplace', 2],
      ['marketplace', 4],
    ]);
  });

  it('skips an order with neither order_id nor id, and keeps both dialects in one answer', async () => {
    const live = (JSON.parse(sample('my_orders.json')) as { orders: unknown[] }).orders[0];
    const spec = {
      order_id: 7,
      renting_server: 8,
      type: 'spot',
      status: 'creating_order',
      currency: 'NATIVE-Blockchain',
      price: 1,
      created: 5,
    };
    const skipped: number[] = [];
    const { client } = harness(() => answer(JSON.stringify({ code: 0, orders: [{ si: 1 }, live, spec] })), {
      onSkipped: (_e, list) => list.forEach((s) => skipped.push(s.index)),
    });
    expect((await client.listOrders()).map((o) => [o.order_id, o.status])).toEqual([
      [58991, 'running'],
      [7, 'creating_order'],
    ]);
    expect(skipped).toEqual([0]);
  });

  it.each([
    [{ online: false }, 'creating_order'],
    [{ expired: true }, 'expired'],
    [{ tcp_ports: ['8888:1200'] }, 'creating_order'],
    [{ pub_cluster: [] }, 'creating_order'],
    [{ online: undefined }, 'running'],
  ])('live readiness: %p reads as %s', async (patch, status) => {
    const order = {
      ...(JSON.parse(sample('my_orders.json')) as { orders: Record<string, unknown>[] }).orders[0],
      ...patch,
    };
    const { client } = harness(() => answer(JSON.stringify({ code: 0, orders: [order] })));
    expect((await client.listOrders())[0]?.status).toBe(status);
  });
});

describe('transport as production behaves', () => {
  it(`sends User-Agent ${USER_AGENT} (the package version) and the auth header`, async () => {
    const { client, requests } = harness(() => answer(sample('wallets.json')));
    await client.listWallets();
    expect(USER_AGENT).toBe(`gpu-order-relay/${version}`);
    expect(requests[0]?.headers.get('user-agent')).toBe(USER_AGENT);
    expect(requests[0]?.headers.get('auth')).toBe('live-key');
  });

  it.each([
    ['a body with code 3', '{"code":3}'],
    ['an empty body', ''],
    ['a plain-text body', 'Unauthorized'],
  ])('HTTP 401 with %s is MarketplaceAuthError, not retried', async (_label, body) => {
    const { client, requests } = harness(() => answer(body, 401, 'text/plain'));
    await expect(client.listServers()).rejects.toBeInstanceOf(MarketplaceAuthError);
    expect(requests).toHaveLength(1);
  });

  it('HTTP 429 without a readable body is still a rate limit: retried, then MarketplaceRateLimitedError', async () => {
    const { client, requests } = harness(() => answer('Too Many Requests', 429, 'text/plain'), {
      maxRateLimitRetries: 2,
    });
    await expect(client.listWallets()).rejects.toBeInstanceOf(MarketplaceRateLimitedError);
    expect(requests).toHaveLength(3);
  });

  it('a CDN 403 with a plain-text body is a transport error naming the status; create_order is not "outcome unknown"', async () => {
    const { client } = harness(() => answer('<html>Access denied</html>', 403, 'text/html'));
    const error = await client.createOrder(ORDER).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(MarketplaceUnavailableError);
    expect((error as Error).message).toContain('HTTP 403');
  });

  it('a 502 with a plain-text body on create_order may have been processed: outcome unknown, naming the status', async () => {
    const { client, requests } = harness(() => answer('Bad Gateway', 502, 'text/plain'));
    const error = await client.createOrder(ORDER).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(OrderOutcomeUnknownError);
    expect((error as Error).message).toContain('HTTP 502');
    expect(requests).toHaveLength(1);
  });

  it('a 503 with a plain-text body on a read is retried, then unavailable naming the status', async () => {
    const { client, requests } = harness(() => answer('Service Unavailable', 503, 'text/plain'));
    const error = await client.listServers().catch((e: unknown) => e);
    expect(error).toBeInstanceOf(MarketplaceUnavailableError);
    expect((error as Error).message).toContain('HTTP 503');
    expect(requests).toHaveLength(3);
  });
});

describe('time budget from the invocation', () => {
  it('caps each attempt at the remaining time and does not start a retry that cannot fit', async () => {
    let remaining = 8_000;
    const { client, requests, sleeps } = harness(() => answer('Service Unavailable', 503, 'text/plain'), {
      remainingMs: () => remaining,
      reserveMs: 3_000,
      baseBackoffMs: 4_000,
      sleep: async (ms) => {
        sleeps.push(ms);
        remaining -= ms;
      },
    });
    await expect(client.listServers()).rejects.toBeInstanceOf(MarketplaceUnavailableError);
    // Budget 5 s: the first backoff (2 s) fits, the second (4 s) would leave no time for an attempt.
    expect(requests).toHaveLength(2);
    expect(sleeps).toEqual([2_000]);
  });

  it('does not start a call when the invocation has no time left', async () => {
    const { client, requests } = harness(() => answer(sample('wallets.json')), {
      remainingMs: () => 3_500,
      reserveMs: 3_000,
    });
    await expect(client.listWallets()).rejects.toBeInstanceOf(MarketplaceUnavailableError);
    expect(requests).toHaveLength(0);
  });

  it('does not take a create_order slot further ahead than the budget: a retryable rate limit instead, nothing sent', async () => {
    const gate = new InMemoryPacingGate();
    // Budget 8 s - 3 s reserve = 5 s; minus one attempt (1 s) leaves 4 s of slot wait.
    const make = () =>
      harness(() => answer(sample('create_order.json')), {
        pacing: gate,
        createIntervalMs: 5_000,
        minIntervalMs: 1_000,
        now: () => 0,
        remainingMs: () => 8_000,
        reserveMs: 3_000,
      });
    const first = make();
    await first.client.createOrder(ORDER);
    const second = make();
    const error = await second.client.createOrder(ORDER).catch((e: unknown) => e);
    expect(first.requests).toHaveLength(1);
    // The next create slot is 5.1 s away (5 s spacing plus the lateness margin): beyond 4 s.
    expect(error).toBeInstanceOf(MarketplaceRateLimitedError);
    expect(second.requests).toHaveLength(0);
    // Nothing was claimed by the refused call: a read at the same moment is not pushed back by it.
    expect(await gate.acquire('probe', 1_100, 0)).toBe(0);
  });
});
