import { startSimulator, type MarketplaceSimulator } from '../../../local/simulator/marketplace-simulator';
import { buildCatalogue, GPU_MODELS } from '../../../local/simulator/catalogue';
import { SPOT_DECREASE_INTERVAL_MS } from '../../../local/simulator/marketplace-state';

interface Answer {
  code: number;
  error?: string;
  [field: string]: unknown;
}

const call = async (
  sim: MarketplaceSimulator,
  endpoint: string,
  options: { method?: 'GET' | 'POST'; body?: unknown; rawBody?: string; query?: string; key?: string | null } = {},
): Promise<Answer> => {
  const headers: Record<string, string> = { 'content-type': 'application/json' };
  if (options.key !== null) headers.auth = options.key ?? sim.apiKey;
  const res = await fetch(`${sim.url}/v1/${endpoint}${options.query ? `?${options.query}` : ''}`, {
    method: options.method ?? 'GET',
    headers,
    body: options.rawBody ?? (options.body === undefined ? undefined : JSON.stringify(options.body)),
  });
  expect(res.status).toBe(200);
  return (await res.json()) as Answer;
};

const post = (sim: MarketplaceSimulator, endpoint: string, body: unknown) =>
  call(sim, endpoint, { method: 'POST', body });

describe('Simulator: marketplace', () => {
  let clock = 1_700_000_000_000;
  let sim: MarketplaceSimulator;

  beforeAll(async () => {
    sim = await startSimulator({ rateLimit: false, readyDelayMs: 3_000, now: () => clock });
  });
  afterAll(() => sim.close());
  beforeEach(() => {
    sim.control.reset();
    clock = 1_700_000_000_000;
  });

  const servers = () => sim.control.servers();
  const available = (predicate: (s: ReturnType<typeof servers>[number]) => boolean = () => true) => {
    const found = servers().find((s) => s.online && !s.rented && s.gpu_array.length > 0 && predicate(s));
    if (!found) throw new Error('catalogue has no such server');
    return found;
  };
  const onDemand = (serverId: number, currency = 'NATIVE-Blockchain') => ({
    renting_server: serverId,
    type: 'on-demand',
    currency,
    image: 'nvidia/cuda:12.4.1-base-ubuntu22.04',
    ports: { '22': 'tcp' },
  });

  describe('catalogue', () => {
    it('serves a realistic catalogue of at least 30 servers', async () => {
      // Act
      const { code, servers: listed } = await call(sim, 'marketplace');
      // Assess
      const list = listed as ReturnType<typeof servers>;
      expect(code).toBe(0);
      expect(list.length).toBeGreaterThanOrEqual(30);
      const models = new Set(list.flatMap((s) => s.gpu_array));
      expect(models.size).toBeGreaterThanOrEqual(6);
      for (const model of ['RTX 4090', 'RTX 3090', 'A100', 'H100', 'RTX A6000', 'L40S']) {
        expect([...models].some((m) => m.includes(model))).toBe(true);
      }
      expect(new Set(list.map((s) => s.gpu_array.length)).size).toBeGreaterThanOrEqual(3);
      expect(list.some((s) => s.rented)).toBe(true);
      expect(list.some((s) => !s.online)).toBe(true);
      expect(list.some((s) => Object.keys(s.price.spot).length === 0 && s.price.usd.spot === undefined)).toBe(true);
      expect(list.some((s) => s.gpu_array.length === 0)).toBe(true);
      expect(new Set(list.map((s) => s.allowed_coins.join(','))).size).toBeGreaterThanOrEqual(3);
      for (const s of list) {
        expect(typeof s.price.usd.on_demand_native).toBe('number');
        expect(s.specs.gpu).toBe(s.gpu_array.length ? `${s.gpu_array.length}x ${s.gpu_array[0]}` : '');
        expect(s.reliability).toBeGreaterThanOrEqual(0);
        expect(s.reliability).toBeLessThanOrEqual(1);
        if (Object.keys(s.price.spot).length) expect(typeof s.price.usd.spot).toBe('number');
      }
    });

    it('is deterministic from the seed', async () => {
      // Prepare
      const other = await startSimulator({ seed: 1, rateLimit: false });
      const different = await startSimulator({ seed: 2, rateLimit: false });
      try {
        // Act
        const [a, b, c] = await Promise.all([
          call(sim, 'marketplace'),
          call(other, 'marketplace'),
          call(different, 'marketplace'),
        ]);
        // Assess
        expect(b.servers).toEqual(a.servers);
        expect(c.servers).not.toEqual(a.servers);
        expect(buildCatalogue(7)).toEqual(buildCatalogue(7));
        expect(GPU_MODELS.length).toBeGreaterThanOrEqual(6);
      } finally {
        await Promise.all([other.close(), different.close()]);
      }
    });
  });

  describe('result codes', () => {
    it('answers code 3 without a key or with a wrong key', async () => {
      expect((await call(sim, 'marketplace', { key: null })).code).toBe(3);
      expect((await call(sim, 'wallets', { key: 'wrong' })).code).toBe(3);
    });

    it('answers code 4 for an unknown path or the wrong method', async () => {
      expect((await call(sim, 'no_such_endpoint')).code).toBe(4);
      expect((await call(sim, 'create_order', { method: 'GET' })).code).toBe(4);
      expect(sim.control.counters().calls.invalid).toBe(1);
    });

    it('answers code 2 for invalid input', async () => {
      const id = available().id;
      expect((await call(sim, 'create_order', { method: 'POST', rawBody: '{not json' })).code).toBe(2);
      expect((await post(sim, 'create_order', { ...onDemand(id), image: undefined })).code).toBe(2);
      expect((await post(sim, 'create_order', { ...onDemand(id), ssh_password: 'has spaces!' })).code).toBe(2);
      expect((await post(sim, 'create_order', { ...onDemand(id), ssh_password: 'a'.repeat(33) })).code).toBe(2);
      expect((await post(sim, 'create_order', { ...onDemand(id), ports: { '22': 'udp' } })).code).toBe(2);
      expect((await post(sim, 'create_order', { ...onDemand(id), env: { A: 1 } })).code).toBe(2);
      expect((await post(sim, 'create_order', { ...onDemand(id), type: 'spot' })).code).toBe(2);
      expect((await post(sim, 'create_order', onDemand(999_999))).code).toBe(2);
      expect((await post(sim, 'cancel_order', { id: 'x' })).code).toBe(2);
      expect((await call(sim, 'spot_marketplace', { query: 'market=abc' })).code).toBe(2);
      expect(sim.control.counters().ordersCreated).toBe(0);
    });

    it('rate limits more than one request per interval per key with code 5', async () => {
      // Prepare
      const limited = await startSimulator({ minIntervalMs: 60_000 });
      try {
        // Act
        const first = await call(limited, 'wallets');
        const second = await call(limited, 'wallets');
        const third = await call(limited, 'marketplace');
        // Assess
        expect([first.code, second.code, third.code]).toEqual([0, 5, 5]);
        expect(limited.control.counters()).toMatchObject({ rateLimited: 2, calls: { wallets: 2, marketplace: 1 } });
        limited.control.setRateLimit(false);
        expect((await call(limited, 'wallets')).code).toBe(0);
      } finally {
        await limited.close();
      }
    });

    it.each([
      ['server-offline', (s: ReturnType<typeof servers>[number]) => !s.online && !s.rented],
      ['server-already-rented', (s: ReturnType<typeof servers>[number]) => s.online && s.rented],
    ])('answers code 6 %s', async (error, predicate) => {
      // Prepare
      const server = servers().find((s) => predicate(s) && s.allowed_coins.includes('NATIVE-Blockchain'));
      if (!server) throw new Error('catalogue lacks the case');
      // Act
      const answer = await post(sim, 'create_order', onDemand(server.id));
      // Assess
      expect(answer).toEqual({ code: 6, error });
    });

    it('answers code 6 currency-not-allowed', async () => {
      const server = available((s) => !s.allowed_coins.includes('bitcoin'));
      expect(await post(sim, 'create_order', onDemand(server.id, 'bitcoin'))).toEqual({
        code: 6,
        error: 'currency-not-allowed',
      });
    });

    it('answers code 6 too_low_price for a spot bid under the server minimum', async () => {
      const server = available((s) => s.price.spot['NATIVE-Blockchain'] !== undefined);
      const minimum = server.price.spot['NATIVE-Blockchain'] as number;
      const body = { ...onDemand(server.id), type: 'spot', spotprice: minimum * 0.9 };
      expect(await post(sim, 'create_order', body)).toEqual({ code: 6, error: 'too_low_price' });
      expect((await post(sim, 'create_order', { ...body, spotprice: minimum * 1.1 })).code).toBe(0);
    });

    it('answers code 6 not_enough_balance and debits the wallet on rent', async () => {
      // Prepare
      const server = available((s) => s.allowed_coins.includes('NATIVE-Blockchain'));
      const price = server.price.on_demand['NATIVE-Blockchain'] as number;
      sim.control.setBalance('NATIVE-Blockchain', price * 1.5);
      // Act
      const rented = await post(sim, 'create_order', onDemand(server.id));
      const other = available(
        (s) =>
          s.allowed_coins.includes('NATIVE-Blockchain') &&
          (s.price.on_demand['NATIVE-Blockchain'] as number) > price * 0.5,
      );
      const refused = await post(sim, 'create_order', onDemand(other.id));
      const { wallets } = await call(sim, 'wallets');
      // Assess
      expect(rented.code).toBe(0);
      expect(refused).toEqual({ code: 6, error: 'not_enough_balance' });
      const native = (wallets as { name: string; balance: number }[]).find((w) => w.name === 'NATIVE-Blockchain');
      expect(native?.balance).toBeCloseTo(price * 0.5, 6);
    });
  });

  describe('orders', () => {
    it('moves an order from creating_order to running after the ready delay', async () => {
      // Prepare
      const server = available();
      const { order_id } = await post(sim, 'create_order', onDemand(server.id));
      // Act
      const before = (await call(sim, 'my_orders')).orders as {
        order_id: number;
        status: string;
        started: number;
        connection: { ssh?: string };
      }[];
      clock += 2_999;
      const almost = (await call(sim, 'my_orders')).orders as typeof before;
      clock += 1;
      const after = (await call(sim, 'my_orders')).orders as typeof before;
      // Assess
      expect(typeof order_id).toBe('number');
      expect(before).toEqual([
        expect.objectContaining({ order_id, status: 'creating_order', started: 0, connection: {} }),
      ]);
      expect(almost[0]?.status).toBe('creating_order');
      expect(after[0]).toMatchObject({ order_id, status: 'running', renting_server: server.id });
      expect(after[0]?.connection.ssh).toMatch(/^ssh root@\S+ -p \d+$/);
      expect(servers().find((s) => s.id === server.id)?.rented).toBe(true);
    });

    it('cancels an order, which then only shows with return_completed', async () => {
      // Prepare
      const server = available();
      const { order_id } = await post(sim, 'create_order', onDemand(server.id));
      // Act
      const cancelled = await post(sim, 'cancel_order', { id: order_id });
      const active = (await call(sim, 'my_orders')).orders as unknown[];
      const all = (await call(sim, 'my_orders', { query: 'return_completed=true' })).orders as {
        order_id: number;
        status: string;
      }[];
      const again = await post(sim, 'cancel_order', { id: order_id });
      // Assess
      expect(cancelled).toEqual({ code: 0 });
      expect(active).toEqual([]);
      expect(all).toEqual([expect.objectContaining({ order_id, status: 'expired' })]);
      expect(again.code).toBe(2);
      expect(servers().find((s) => s.id === server.id)?.rented).toBe(false);
      expect(sim.control.orders()).toEqual([
        expect.objectContaining({ order_id, completed: true, end_reason: 'cancelled' }),
      ]);
    });

    it('lists an order placed under a visible delay once the delay passes, or at once when revealed', async () => {
      // Prepare: two orders that would show a minute late
      sim.control.setVisibleDelay(60_000);
      const native = () => available((s) => s.allowed_coins.includes('NATIVE-Blockchain')).id;
      const first = (await post(sim, 'create_order', onDemand(native()))).order_id as number;
      const second = (await post(sim, 'create_order', onDemand(native()))).order_id as number;
      const ids = async () => ((await call(sim, 'my_orders')).orders as { order_id: number }[]).map((o) => o.order_id);
      const hidden = await ids();
      // Act
      sim.control.revealOrders();
      const revealed = await ids();
      const placedLater = await post(sim, 'create_order', onDemand(native()));
      const later = placedLater.order_id as number;
      // Assess: the revealed ones show now; one placed after still waits for its delay
      expect(hidden).toEqual([]);
      expect(placedLater).toEqual({ code: 0, order_id: expect.any(Number) });
      expect(revealed.sort()).toEqual([first, second].sort());
      expect(await ids()).not.toContain(later);
      clock += 60_000;
      expect(await ids()).toContain(later);
    });

    it('expires an order after the server maximum rental time', async () => {
      const server = available();
      await post(sim, 'create_order', onDemand(server.id));
      clock += 3_000 + server.mrl * 3_600_000;
      expect((await call(sim, 'my_orders')).orders).toEqual([]);
      expect(servers().find((s) => s.id === server.id)?.rented).toBe(false);
    });
  });

  describe('spot market', () => {
    const rentSpot = async () => {
      const server = available((s) => s.price.spot['NATIVE-Blockchain'] !== undefined);
      const minimum = server.price.spot['NATIVE-Blockchain'] as number;
      const { order_id } = await post(sim, 'create_order', {
        ...onDemand(server.id),
        type: 'spot',
        spotprice: minimum * 2,
      });
      return { server, minimum, orderId: order_id as number };
    };
    const setPrice = (orderId: number, desired: number) =>
      post(sim, 'set_spot_price', { order_id: orderId, desired_price: desired });

    it('lists the spot offers of a server', async () => {
      const { server, minimum, orderId } = await rentSpot();
      const answer = await call(sim, 'spot_marketplace', { query: `market=${server.id}` });
      expect(answer.code).toBe(0);
      expect(answer.market).toEqual({
        offers: [{ order_id: orderId, price: minimum * 2, currency: 'NATIVE-Blockchain' }],
        server: { id: server.id, min_pricing: server.price.spot, online: true },
      });
    });

    it('allows one decrease per 600 s, with a bounded step, and any increase', async () => {
      // Prepare
      const { minimum, orderId } = await rentSpot();
      const start = minimum * 2;
      // Act + Assess
      expect((await setPrice(orderId, start * 1.1)).code).toBe(0);
      expect(await setPrice(orderId, start * 1.1 * 0.7)).toEqual({ code: 6, error: 'too_low_price' });
      expect((await setPrice(orderId, start)).code).toBe(0);
      expect((await setPrice(orderId, start * 0.95)).code).toBe(2);
      expect((await setPrice(orderId, start * 1.2)).code).toBe(0);
      clock += SPOT_DECREASE_INTERVAL_MS - 1;
      expect((await setPrice(orderId, start)).code).toBe(2);
      clock += 1;
      expect((await setPrice(orderId, start)).code).toBe(0);
      clock += SPOT_DECREASE_INTERVAL_MS;
      expect(await setPrice(orderId, minimum * 0.99)).toEqual({ code: 6, error: 'too_low_price' });
      expect(sim.control.orders()[0]?.price).toBe(start);
    });

    it('refuses to reprice an on-demand or unknown order', async () => {
      const server = available();
      const { order_id } = await post(sim, 'create_order', onDemand(server.id));
      expect((await setPrice(order_id as number, 1)).code).toBe(2);
      expect((await setPrice(424242, 1)).code).toBe(2);
    });
  });

  describe('control', () => {
    it('injects faults for the next calls of an endpoint', async () => {
      // Prepare
      sim.control.inject({ endpoint: 'wallets', kind: 'code', code: 6, error: 'not_enough_balance', times: 2 });
      sim.control.inject({ endpoint: '*', kind: 'http500' });
      // Act
      const first = await call(sim, 'wallets');
      const second = await call(sim, 'wallets');
      const broken = await fetch(`${sim.url}/v1/marketplace`, { headers: { auth: sim.apiKey } });
      const third = await call(sim, 'wallets');
      // Assess
      expect([first, second]).toEqual([
        { code: 6, error: 'not_enough_balance' },
        { code: 6, error: 'not_enough_balance' },
      ]);
      expect(broken.status).toBe(500);
      expect(await broken.text()).toBe('Internal Server Error');
      expect(third.code).toBe(0);
    });

    it('creates the order and then drops the connection on timeoutAfterSend', async () => {
      sim.control.inject({ endpoint: 'create_order', kind: 'timeoutAfterSend' });
      await expect(post(sim, 'create_order', onDemand(available().id))).rejects.toThrow();
      expect(sim.control.orders()).toHaveLength(1);
      expect(sim.control.counters().ordersCreated).toBe(1);
    });

    it('serves the control over HTTP under /_sim', async () => {
      // Prepare
      const control = async (method: string, path: string, body?: unknown) => {
        const res = await fetch(`${sim.url}/_sim/${path}`, {
          method,
          body: body === undefined ? undefined : JSON.stringify(body),
        });
        return { status: res.status, body: (await res.json()) as Record<string, unknown> };
      };
      const server = available();
      // Act
      await control('POST', 'faults', { endpoint: 'my_orders', kind: 'code', code: 1 });
      const faulted = await call(sim, 'my_orders');
      await control('POST', 'ready-delay', { ms: 0 });
      await control('POST', `servers/${server.id}`, { online: false });
      const offline = await post(sim, 'create_order', onDemand(server.id));
      await control('POST', 'wallets', { name: 'bitcoin', balance: 1 });
      const counters = await control('GET', 'counters');
      const bad = await control('POST', 'faults', { endpoint: 'x', kind: 'nope' });
      const unknown = await control('GET', 'nothing');
      await control('POST', 'reset');
      // Assess
      expect(faulted.code).toBe(1);
      expect(offline).toEqual({ code: 6, error: 'server-offline' });
      expect(sim.control.servers().find((s) => s.id === server.id)?.online).toBe(true);
      expect(counters.body).toEqual({
        calls: { my_orders: 1, create_order: 1 },
        processed: { my_orders: 1, create_order: 1 },
        rateLimited: 0,
        ordersCreated: 0,
      });
      expect(bad.status).toBe(400);
      expect(unknown.status).toBe(404);
      expect(sim.control.counters().calls).toEqual({});
    });

    it('adds servers and reports every order for assertions', async () => {
      // Prepare
      const template = available();
      sim.control.addServer({ ...template, id: 9_999, rented: false, allowed_coins: ['NATIVE-Blockchain'] });
      // Act
      const answer = await post(sim, 'create_order', onDemand(9_999));
      // Assess
      expect(answer.code).toBe(0);
      expect(sim.control.orders()).toEqual([
        expect.objectContaining({
          renting_server: 9_999,
          image: 'nvidia/cuda:12.4.1-base-ubuntu22.04',
          completed: false,
        }),
      ]);
      expect(() => sim.control.addServer({ ...template, id: 9_999 })).toThrow('exists');
    });
  });
});
