/**
 * Behaviour the simulator has in both dialects: the same rules over the same state, worded by the
 * dialect. Each case reads answers through a small per-dialect reader, so one test covers both.
 */
import {
  DIALECTS,
  parseDialect,
  startSimulator,
  type Dialect,
  type MarketplaceSimulator,
} from '../../../local/simulator/marketplace-simulator';
import { SPOT_DECREASE_INTERVAL_MS } from '../../../local/simulator/marketplace-state';
import { startLocalRuntime } from '../../../local/runtime';

interface Answer {
  status: number;
  body: { code: number; error?: string; [field: string]: unknown };
}
type ApiOrder = Record<string, unknown>;

/** How each dialect words what the tests look at. */
const WORDING: Readonly<
  Record<
    Dialect,
    {
      readonly authStatus: number;
      readonly rateLimitStatus: number;
      readonly orderId: (o: ApiOrder) => unknown;
      readonly ready: (o: ApiOrder) => boolean;
      readonly ended: (o: ApiOrder) => boolean;
      /** The spec words a too-early spot decrease as code 2, production as code 6 with its own error. */
      readonly tooSoon: { code: number; error?: string };
      readonly tooBigStep: string;
    }
  >
> = {
  spec: {
    authStatus: 200,
    rateLimitStatus: 200,
    orderId: (o) => o.order_id,
    ready: (o) =>
      o.status === 'running' && /^ssh root@\S+ -p \d+$/.test(String((o.connection as { ssh?: string }).ssh)),
    ended: (o) => o.status === 'expired',
    tooSoon: { code: 2 },
    tooBigStep: 'too_low_price',
  },
  live: {
    authStatus: 401,
    rateLimitStatus: 429,
    orderId: (o) => o.id,
    ready: (o) =>
      o.online === true &&
      o.expired === false &&
      (o.pub_cluster as string[]).length > 0 &&
      (o.tcp_ports as string[]).some((p) => /^22:\d+$/.test(p)),
    ended: (o) => o.expired === true,
    tooSoon: { code: 6, error: 'can_lower_every_600_seconds' },
    tooBigStep: 'exceeded_max_step',
  },
};

const call = async (
  sim: MarketplaceSimulator,
  endpoint: string,
  options: { method?: 'GET' | 'POST'; body?: unknown; query?: string; key?: string | null } = {},
): Promise<Answer> => {
  const headers: Record<string, string> = { 'content-type': 'application/json' };
  if (options.key !== null) headers.auth = options.key ?? sim.apiKey;
  const res = await fetch(`${sim.url}/v1/${endpoint}${options.query ? `?${options.query}` : ''}`, {
    method: options.method ?? 'GET',
    headers,
    body: options.body === undefined ? undefined : JSON.stringify(options.body),
  });
  return { status: res.status, body: (await res.json()) as Answer['body'] };
};
const post = (sim: MarketplaceSimulator, endpoint: string, body: unknown) =>
  call(sim, endpoint, { method: 'POST', body });
const controlRoute = async (sim: MarketplaceSimulator, method: string, path: string, body?: unknown) => {
  const res = await fetch(`${sim.url}/_sim/${path}`, {
    method,
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  return { status: res.status, body: (await res.json()) as Record<string, unknown> };
};

describe.each(DIALECTS)('Simulator: %s dialect', (dialect) => {
  const wording = WORDING[dialect];
  let clock = 1_700_000_000_000;
  let sim: MarketplaceSimulator;

  beforeAll(async () => {
    sim = await startSimulator({ dialect, rateLimit: false, readyDelayMs: 3_000, now: () => clock });
  });
  afterAll(() => sim.close());
  beforeEach(() => {
    sim.control.reset();
    clock = 1_700_000_000_000;
  });

  const coin = () => sim.control.nativeCoin;
  const available = (
    predicate: (s: ReturnType<MarketplaceSimulator['control']['servers']>[number]) => boolean = () => true,
  ) => {
    const found = sim.control
      .servers()
      .find((s) => s.online && !s.rented && s.gpu_array.length > 0 && s.allowed_coins.includes(coin()) && predicate(s));
    if (!found) throw new Error('catalogue has no such server');
    return found;
  };
  const onDemand = (serverId: number, currency = coin()) => ({
    renting_server: serverId,
    type: 'on-demand',
    currency,
    image: 'nvidia/cuda:12.4.1-base-ubuntu22.04',
    ports: { '22': 'tcp' },
  });
  const myOrders = async (query?: string) => (await call(sim, 'my_orders', { query })).body.orders as ApiOrder[];
  const onlyOrderId = () => {
    const [order, ...rest] = sim.control.orders();
    if (!order || rest.length) throw new Error('expected exactly one order');
    return order.order_id;
  };

  describe('wording', () => {
    it('names its dialect and native coin in the control and in GET /_sim/info', async () => {
      const info = await controlRoute(sim, 'GET', 'info');
      expect(sim.control.dialect).toBe(dialect);
      expect(sim.dialect).toBe(dialect);
      expect(coin()).toBe(dialect === 'live' ? 'CLORE-Blockchain' : 'NATIVE-Blockchain');
      expect(info.body).toEqual({
        dialect,
        nativeCoin: coin(),
        minIntervalMs: 1_000,
        createIntervalMs: dialect === 'live' ? 5_000 : 0,
      });
    });

    it('uses only its own native coin name, in answers and in the control', async () => {
      // Prepare
      const other = dialect === 'live' ? 'NATIVE-Blockchain' : 'CLORE-Blockchain';
      const server = available();
      // Act
      const created = await post(sim, 'create_order', onDemand(server.id));
      const answers = await Promise.all([call(sim, 'marketplace'), call(sim, 'wallets'), call(sim, 'my_orders')]);
      const refused = await post(sim, 'create_order', onDemand(available().id, other));
      // Assess
      expect(created.body.code).toBe(0);
      for (const { body } of answers) {
        expect(JSON.stringify(body)).toContain(coin());
        expect(JSON.stringify(body)).not.toContain(other);
      }
      expect(JSON.stringify([sim.control.servers(), sim.control.wallets(), sim.control.orders()])).not.toContain(other);
      expect(refused.body).toEqual({ code: 6, error: 'currency-not-allowed' });
    });
  });

  describe('auth and rate limits', () => {
    it(`answers code 3 with HTTP ${wording.authStatus} without a key or with a wrong key`, async () => {
      const missing = await call(sim, 'marketplace', { key: null });
      const wrong = await call(sim, 'wallets', { key: 'wrong' });
      expect([missing, wrong]).toEqual([
        { status: wording.authStatus, body: { code: 3 } },
        { status: wording.authStatus, body: { code: 3 } },
      ]);
    });

    it(`answers a request sooner than minIntervalMs with code 5 and HTTP ${wording.rateLimitStatus}, unprocessed`, async () => {
      // Prepare
      const limited = await startSimulator({ dialect, minIntervalMs: 60_000 });
      try {
        const server = limited.control
          .servers()
          .find((s) => s.online && !s.rented && s.allowed_coins.includes(limited.control.nativeCoin));
        // Act
        const first = await call(limited, 'wallets');
        const second = await call(limited, 'wallets');
        const create = await post(limited, 'create_order', {
          ...onDemand(server?.id ?? 0, limited.control.nativeCoin),
        });
        // Assess
        expect(first.status).toBe(200);
        expect(first.body.code).toBe(0);
        expect([second, create]).toEqual([
          { status: wording.rateLimitStatus, body: { code: 5 } },
          { status: wording.rateLimitStatus, body: { code: 5 } },
        ]);
        expect(limited.control.counters()).toMatchObject({ rateLimited: 2, ordersCreated: 0 });
        // Every request is a call; only the one that passed the rate limit was processed.
        expect(limited.control.counters()).toMatchObject({
          calls: { wallets: 2, create_order: 1 },
          processed: { wallets: 1 },
        });
      } finally {
        await limited.close();
      }
    });

    it('answers a create_order sooner than createIntervalMs with code 5, unprocessed, while other calls pass', async () => {
      // Prepare
      const limited = await startSimulator({ dialect, minIntervalMs: 0, createIntervalMs: 60_000 });
      try {
        const nativeCoin = limited.control.nativeCoin;
        const [a, b] = limited.control
          .servers()
          .filter((s) => s.online && !s.rented && s.allowed_coins.includes(nativeCoin));
        // Act
        const first = await post(limited, 'create_order', onDemand(a?.id ?? 0, nativeCoin));
        const between = await call(limited, 'my_orders');
        const second = await post(limited, 'create_order', onDemand(b?.id ?? 0, nativeCoin));
        // Assess
        expect(first).toMatchObject({ status: 200, body: { code: 0 } });
        expect(between).toMatchObject({ status: 200, body: { code: 0 } });
        expect(second).toEqual({ status: wording.rateLimitStatus, body: { code: 5 } });
        expect(limited.control.counters()).toMatchObject({ rateLimited: 1, ordersCreated: 1 });
        expect(limited.createIntervalMs).toBe(60_000);
      } finally {
        await limited.close();
      }
    });

    it('counts a create_order for the general interval too', async () => {
      const limited = await startSimulator({ dialect, minIntervalMs: 60_000, createIntervalMs: 1 });
      try {
        const server = limited.control
          .servers()
          .find((s) => s.online && !s.rented && s.allowed_coins.includes(limited.control.nativeCoin));
        expect(
          (await post(limited, 'create_order', onDemand(server?.id ?? 0, limited.control.nativeCoin))).body.code,
        ).toBe(0);
        expect(await call(limited, 'wallets')).toEqual({ status: wording.rateLimitStatus, body: { code: 5 } });
      } finally {
        await limited.close();
      }
    });

    it('answers an injected code 5 fault as the dialect words a rate limit', async () => {
      sim.control.inject({ endpoint: 'wallets', kind: 'code', code: 5 });
      expect(await call(sim, 'wallets')).toEqual({ status: wording.rateLimitStatus, body: { code: 5 } });
      expect((await call(sim, 'wallets')).status).toBe(200);
    });
  });

  describe('orders', () => {
    it('makes an order ready after the ready delay, not before', async () => {
      // Prepare
      const server = available();
      const created = await post(sim, 'create_order', onDemand(server.id));
      const id = onlyOrderId();
      // Act
      const before = await myOrders();
      clock += 2_999;
      const almost = await myOrders();
      clock += 1;
      const after = await myOrders();
      // Assess
      expect(created.body.code).toBe(0);
      expect(before.map(wording.orderId)).toEqual([id]);
      expect([before, almost].map((orders) => wording.ready(orders[0] as ApiOrder))).toEqual([false, false]);
      expect(wording.ready(after[0] as ApiOrder)).toBe(true);
      expect(sim.control.orders()[0]).toMatchObject({
        order_id: id,
        status: 'running',
        online: true,
        expired: false,
        renting_server: server.id,
      });
    });

    it('cancels an order, which then shows only with return_completed, ended', async () => {
      // Prepare
      const server = available();
      await post(sim, 'create_order', onDemand(server.id));
      const id = onlyOrderId();
      // Act
      const cancelled = await post(sim, 'cancel_order', { id });
      const active = await myOrders();
      const all = await myOrders('return_completed=true');
      const again = await post(sim, 'cancel_order', { id });
      // Assess
      expect(cancelled.body).toEqual({ code: 0 });
      expect(active).toEqual([]);
      expect(all.map(wording.orderId)).toEqual([id]);
      expect(wording.ended(all[0] as ApiOrder)).toBe(true);
      expect(again.body.code).toBe(2);
      expect(sim.control.orders()).toEqual([
        expect.objectContaining({ order_id: id, completed: true, end_reason: 'cancelled', expired: true }),
      ]);
    });

    it('answers too_low_price for a spot bid under the minimum, with min_price only in live', async () => {
      const server = available((s) => s.price.spot[coin()] !== undefined);
      const minimum = server.price.spot[coin()] as number;
      const body = { ...onDemand(server.id), type: 'spot', spotprice: minimum * 0.9 };
      const refused = await post(sim, 'create_order', body);
      expect(refused.body).toEqual(
        dialect === 'live'
          ? { code: 6, error: 'too_low_price', min_price: minimum }
          : { code: 6, error: 'too_low_price' },
      );
      expect(sim.control.counters().ordersCreated).toBe(0);
    });
  });

  describe('spot prices', () => {
    const rentSpot = async () => {
      const server = available((s) => s.price.spot[coin()] !== undefined);
      const minimum = server.price.spot[coin()] as number;
      await post(sim, 'create_order', { ...onDemand(server.id), type: 'spot', spotprice: minimum * 2 });
      return { server, minimum, orderId: onlyOrderId() };
    };
    const setPrice = async (orderId: number, desired: number) =>
      (await post(sim, 'set_spot_price', { order_id: orderId, desired_price: desired })).body;

    it("refuses a too-big decrease, a second decrease within 600 s and a price under the minimum, each in the dialect's words", async () => {
      // Prepare
      const { minimum, orderId } = await rentSpot();
      const start = minimum * 2;
      // Act
      const tooBig = await setPrice(orderId, start * 0.7);
      const first = await setPrice(orderId, start * 0.9);
      const tooSoon = await setPrice(orderId, start * 0.85);
      clock += SPOT_DECREASE_INTERVAL_MS;
      const later = await setPrice(orderId, start * 0.85);
      clock += SPOT_DECREASE_INTERVAL_MS;
      const underMinimum = await setPrice(orderId, minimum * 0.99);
      // Assess
      expect(tooBig).toMatchObject({ code: 6, error: wording.tooBigStep });
      expect(first).toEqual({ code: 0 });
      expect(tooSoon).toMatchObject(wording.tooSoon);
      expect(later).toEqual({ code: 0 });
      expect(underMinimum).toMatchObject({ code: 6, error: 'too_low_price' });
      expect(sim.control.orders()[0]?.price).toBeCloseTo(start * 0.85, 8);
      if (dialect === 'live') {
        expect(tooBig.max_step).toBeCloseTo(start * 0.2, 6);
        expect(tooSoon.time_to_lowering).toBe(600);
        expect(underMinimum.min_price).toBe(minimum);
      } else {
        expect(
          [tooBig, tooSoon, underMinimum].some((b) => 'max_step' in b || 'time_to_lowering' in b || 'min_price' in b),
        ).toBe(false);
      }
    });
  });

  describe('control', () => {
    it('changes an order status through the control: offline, back online, expired', async () => {
      // Prepare
      const server = available();
      await post(sim, 'create_order', onDemand(server.id));
      const id = onlyOrderId();
      clock += 3_000;
      // Act
      const running = wording.ready((await myOrders())[0] as ApiOrder);
      const paused = sim.control.setOrder(id, { online: false });
      const pausedAnswer = (await myOrders())[0] as ApiOrder;
      clock += 60_000;
      const stillPaused = wording.ready((await myOrders())[0] as ApiOrder);
      const resumed = sim.control.setOrder(id, { online: true });
      const resumedReady = wording.ready((await myOrders())[0] as ApiOrder);
      const expired = sim.control.setOrder(id, { expired: true });
      const active = await myOrders();
      const all = await myOrders('return_completed=true');
      // Assess
      expect(running).toBe(true);
      expect(paused).toMatchObject({ order_id: id, status: 'paused', online: false, expired: false, completed: false });
      expect(wording.ready(pausedAnswer)).toBe(false);
      expect(wording.ended(pausedAnswer)).toBe(false);
      expect(stillPaused).toBe(false);
      expect(resumed).toMatchObject({ status: 'running', online: true });
      expect(resumedReady).toBe(true);
      expect(expired).toMatchObject({
        status: 'expired',
        online: false,
        expired: true,
        completed: true,
        end_reason: 'expired',
      });
      expect(active).toEqual([]);
      expect(wording.ended(all[0] as ApiOrder)).toBe(true);
      expect(sim.control.servers().find((s) => s.id === server.id)?.rented).toBe(false);
      expect(() => sim.control.setOrder(id, { online: true })).toThrow('ended');
      expect(() => sim.control.setOrder(424_242, { expired: true })).toThrow('no order');
    });

    it('holds a starting order offline and can run it before its ready time', async () => {
      await post(sim, 'create_order', onDemand(available().id));
      const id = onlyOrderId();
      sim.control.setOrder(id, { online: false });
      clock += 3_000;
      expect(wording.ready((await myOrders())[0] as ApiOrder)).toBe(false);
      sim.control.setOrder(id, { status: 'running' });
      expect(wording.ready((await myOrders())[0] as ApiOrder)).toBe(true);
    });

    it('serves orders, order status changes and server patches over HTTP under /_sim', async () => {
      // Prepare
      const server = available();
      await post(sim, 'create_order', onDemand(server.id));
      const id = onlyOrderId();
      const other = available();
      // Act
      const listed = await controlRoute(sim, 'GET', 'orders');
      const patched = await controlRoute(sim, 'POST', `orders/${id}`, { online: false });
      const ended = await controlRoute(sim, 'POST', `orders/${id}`, { status: 'expired' });
      const badPatch = await controlRoute(sim, 'POST', `orders/${id}`, { colour: 'red' });
      const unknown = await controlRoute(sim, 'POST', 'orders/424242', { expired: true });
      await controlRoute(sim, 'POST', `servers/${other.id}`, { online: false });
      const offline = await post(sim, 'create_order', onDemand(other.id));
      await controlRoute(sim, 'POST', 'wallets', { name: coin(), balance: 1 });
      // Assess
      expect(listed.body.orders).toEqual([expect.objectContaining({ order_id: id, currency: coin() })]);
      expect(patched).toMatchObject({ status: 200, body: { order: { order_id: id, online: false } } });
      expect(ended).toMatchObject({ status: 200, body: { order: { order_id: id, expired: true, completed: true } } });
      expect(badPatch.status).toBe(400);
      expect(unknown.status).toBe(400);
      expect(offline.body).toEqual({ code: 6, error: 'server-offline' });
      expect(sim.control.wallets()).toContainEqual({ name: coin(), balance: 1 });
    });

    it("adds a server given in the dialect's coin names", async () => {
      const template = available();
      sim.control.addServer({ ...template, id: 9_999, rented: false, allowed_coins: [coin()] });
      expect((await post(sim, 'create_order', onDemand(9_999))).body.code).toBe(0);
      expect(sim.control.servers().find((s) => s.id === 9_999)?.allowed_coins).toEqual([coin()]);
    });
  });
});

describe('Function: parseDialect', () => {
  it('reads spec and live, defaults to spec, and refuses anything else naming the variable', () => {
    expect([
      parseDialect(undefined),
      parseDialect(''),
      parseDialect('spec'),
      parseDialect('live'),
      parseDialect(' live '),
    ]).toEqual(['spec', 'spec', 'spec', 'live', 'live']);
    expect(() => parseDialect('production')).toThrow('MARKETPLACE_DIALECT must be one of spec, live; got "production"');
    expect(() => parseDialect('LIVE')).toThrow('MARKETPLACE_DIALECT');
  });

  it('makes a misspelt MARKETPLACE_DIALECT a start-up error of the local runtime', async () => {
    await expect(startLocalRuntime({ port: 0, quiet: true, env: { MARKETPLACE_DIALECT: 'prod' } })).rejects.toThrow(
      'MARKETPLACE_DIALECT must be one of spec, live; got "prod"',
    );
  });
});
