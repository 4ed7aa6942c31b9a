/**
 * The live dialect answers in the shapes of spec/live-v1/*.json: the same keys with the same JSON
 * types at every level (maps keyed by coin are compared by their value types, since which coins a
 * server lists varies). Also the live-only details: gpu_array spelling, price.usd keys, the older
 * element without gpu_array, orders without status, the spot market.
 */
import { readFileSync } from 'node:fs';
import * as path from 'node:path';
import { startSimulator, type MarketplaceSimulator } from '../../../local/simulator/marketplace-simulator';

const SAMPLES = path.join(__dirname, '../../fixtures/marketplace/live-v1');
const sample = (name: string): Record<string, unknown> =>
  JSON.parse(readFileSync(path.join(SAMPLES, `${name}.json`), 'utf8')) as Record<string, unknown>;

/** Paths (dotted, `[]` for array elements) whose keys are coin names or per-coin prices, not fields. */
const COIN_MAPS = new Set([
  'servers[].price.on_demand',
  'servers[].price.spot',
  'servers[].price.usd',
  'servers[].price.original_usd',
  'market.currency_rates_in_usd',
  'market.server.min_pricing',
]);

type Shape = string | { readonly [key: string]: Shape } | readonly Shape[];

/** The JSON structure of a value: key sets and types, arrays by their distinct element shapes. */
const shapeOf = (value: unknown, at = ''): Shape => {
  if (Array.isArray(value)) {
    const distinct = new Map(
      value.map((v) => {
        const s = shapeOf(v, `${at}[]`);
        return [JSON.stringify(s), s];
      }),
    );
    return [...distinct.values()];
  }
  if (value === null) return 'null';
  if (typeof value === 'object') {
    const entries = Object.entries(value as Record<string, unknown>);
    if (COIN_MAPS.has(at)) {
      const types = [...new Set(entries.map(([, v]) => JSON.stringify(shapeOf(v, `${at}.*`))))].sort();
      return `map of ${types.join(' | ') || 'nothing'}`;
    }
    return Object.fromEntries(
      entries.sort(([a], [b]) => a.localeCompare(b)).map(([k, v]) => [k, shapeOf(v, at ? `${at}.${k}` : k)]),
    );
  }
  return typeof value;
};

interface Answer {
  status: number;
  body: Record<string, unknown> & { code: number };
}

describe('Simulator: live dialect answers in the live-v1 shapes', () => {
  let clock = 1_714_608_000_000;
  let sim: MarketplaceSimulator;

  beforeAll(async () => {
    sim = await startSimulator({ dialect: 'live', rateLimit: false, readyDelayMs: 3_000, now: () => clock });
  });
  afterAll(() => sim.close());
  beforeEach(() => {
    sim.control.reset();
    clock = 1_714_608_000_000;
  });

  const call = async (endpoint: string, options: { body?: unknown; query?: string } = {}): Promise<Answer> => {
    const res = await fetch(`${sim.url}/v1/${endpoint}${options.query ? `?${options.query}` : ''}`, {
      method: options.body === undefined ? 'GET' : 'POST',
      headers: { auth: sim.apiKey, 'content-type': 'application/json' },
      body: options.body === undefined ? undefined : JSON.stringify(options.body),
    });
    return { status: res.status, body: (await res.json()) as Answer['body'] };
  };
  type ListedServer = Record<string, unknown> & {
    id: number;
    price: Record<string, Record<string, unknown>>;
    gpu_array?: string[];
    allowed_coins: string[];
  };
  const listing = async () => (await call('marketplace')).body.servers as ListedServer[];
  /** A listing with its one older-style element left out. */
  const current = async () => (await listing()).filter((s) => s.gpu_array !== undefined);
  const rentable = (predicate: (s: ReturnType<MarketplaceSimulator['control']['servers']>[number]) => boolean) => {
    const found = sim.control
      .servers()
      .find(
        (s) =>
          s.online &&
          !s.rented &&
          s.gpu_array.length === 2 &&
          s.allowed_coins.includes('CLORE-Blockchain') &&
          predicate(s),
      );
    if (!found) throw new Error('catalogue has no such server');
    return found;
  };
  const rentSpot = async () => {
    const server = rentable((s) => s.price.spot['CLORE-Blockchain'] !== undefined);
    const minimum = server.price.spot['CLORE-Blockchain'] as number;
    const created = await call('create_order', {
      body: {
        renting_server: server.id,
        type: 'spot',
        currency: 'CLORE-Blockchain',
        image: 'cloreai/jupyter:ubuntu24.04-v2',
        spotprice: minimum * 2,
        ports: { '22': 'tcp', '8888': 'http' },
      },
    });
    return { server, minimum, created };
  };

  describe('/v1/marketplace', () => {
    it('lists servers shaped like marketplace.json, and servers without spot like marketplace-no-spot.json', async () => {
      // Prepare
      const [withSpot, withoutSpot] = [sample('marketplace'), sample('marketplace-no-spot')];
      // Act
      const answer = await call('marketplace');
      const servers = (answer.body.servers as ListedServer[]).filter(
        (s) => s.gpu_array !== undefined && s.gpu_array.length > 0,
      );
      const spot = servers.filter((s) => Object.keys(s.price.spot as object).length > 0);
      const noSpot = servers.filter((s) => Object.keys(s.price.spot as object).length === 0);
      // Assess
      expect(answer.status).toBe(200);
      expect(Object.keys(answer.body).sort()).toEqual(Object.keys(withSpot).sort());
      expect(spot.length).toBeGreaterThan(0);
      expect(noSpot.length).toBeGreaterThan(0);
      const expectedSpot = shapeOf({ servers: withSpot.servers });
      const expectedNoSpot = shapeOf({ servers: withoutSpot.servers });
      for (const s of spot) expect(shapeOf({ servers: [s] })).toEqual(expectedSpot);
      for (const s of noSpot) expect(shapeOf({ servers: [s] })).toEqual(expectedNoSpot);
    });

    it('spells GPUs " <model>" without vendor and prices in USD per payment coin, spot 0 without a spot market', async () => {
      const slug: Record<string, string> = { 'CLORE-Blockchain': 'clore', bitcoin: 'btc', 'USD-Blockchain': 'usd' };
      const servers = await current();
      for (const s of servers) {
        for (const gpu of s.gpu_array ?? []) expect(gpu).toMatch(/^ (RTX|A100|H100|L40S)[^ ]*( \S+)*$/);
        expect(JSON.stringify(s.gpu_array)).not.toContain('NVIDIA');
        const usd = s.price.usd as Record<string, number>;
        expect(Object.keys(usd).sort()).toEqual([...s.allowed_coins.map((c) => `on_demand_${slug[c]}`), 'spot'].sort());
        const hasSpot = Object.keys(s.price.spot as object).length > 0;
        expect(usd.spot === 0).toBe(!hasSpot);
        for (const coin of Object.keys(s.price.on_demand as object)) expect(s.allowed_coins).toContain(coin);
      }
      expect(servers.some((s) => s.gpu_array?.[0] === ' RTX 4090')).toBe(true);
      // Maps may lack coins: some server takes a coin it has no spot price in.
      expect(servers.some((s) => s.allowed_coins.some((c) => !(c in (s.price.spot as object))))).toBe(true);
    });

    it("prices per day like production (S6): on_demand_clore is the CLORE price per day in USD, 24 × the catalogue's USD per hour", async () => {
      const catalogue = new Map(sim.control.servers().map((s) => [s.id, s]));
      const servers = (await current()).filter((s) => s.allowed_coins.includes('CLORE-Blockchain'));
      expect(servers.length).toBeGreaterThan(0);
      for (const s of servers) {
        const usd = s.price.usd as Record<string, number>;
        const perHour = catalogue.get(s.id)?.price.usd.on_demand_native as number;
        expect(usd.on_demand_clore).toBeCloseTo(perHour * 24, 3);
        // The crypto map is per day too: the same price in CLORE at the simulator's rate.
        expect(usd.on_demand_clore).toBeCloseTo((s.price.on_demand['CLORE-Blockchain'] as number) * 0.02, 2);
      }
    });

    it('includes exactly one older-style element without gpu_array and without price.usd, and keeps the variety', async () => {
      const servers = await listing();
      const legacy = servers.filter((s) => s.gpu_array === undefined);
      expect(legacy).toHaveLength(1);
      expect(legacy[0]?.price).not.toHaveProperty('usd');
      expect(servers.filter((s) => s.price.usd === undefined)).toHaveLength(1);
      expect(servers.some((s) => s.rented === true)).toBe(true);
      const offline = sim.control
        .servers()
        .filter((s) => !s.online)
        .map((s) => s.id);
      expect(offline.length).toBeGreaterThan(0);
      expect(servers.map((s) => s.id)).toEqual(expect.arrayContaining(offline));
    });
  });

  it('lists wallets shaped like wallets.json, CLORE-Blockchain first', async () => {
    const answer = await call('wallets');
    const wallets = answer.body.wallets as { name: string }[];
    expect(shapeOf(answer.body)).toEqual(shapeOf(sample('wallets')));
    expect(wallets.map((w) => w.name)).toEqual(['CLORE-Blockchain', 'bitcoin', 'USD-Blockchain']);
  });

  describe('create_order and my_orders', () => {
    it('answers create_order with {code: 0} only, and too_low_price with min_price', async () => {
      // Prepare
      const server = rentable((s) => s.price.spot['CLORE-Blockchain'] !== undefined);
      const minimum = server.price.spot['CLORE-Blockchain'] as number;
      const body = {
        renting_server: server.id,
        type: 'spot',
        currency: 'CLORE-Blockchain',
        image: 'x',
        spotprice: minimum / 2,
      };
      // Act
      const low = await call('create_order', { body });
      const created = await call('create_order', { body: { ...body, spotprice: minimum } });
      // Assess
      expect(created).toEqual({ status: 200, body: sample('create_order') });
      expect(shapeOf(low.body)).toEqual(shapeOf(sample('create_order-too-low-price')));
      expect(low.body).toEqual({ code: 6, error: 'too_low_price', min_price: minimum });
    });

    it('lists orders shaped like my_orders.json: no status, host and ports from the start, online after the ready delay', async () => {
      // Prepare
      const { server, created } = await rentSpot();
      // Act
      const starting = (await call('my_orders')).body;
      clock += 3_000;
      const ready = (await call('my_orders')).body;
      // Assess
      expect(created.body).toEqual({ code: 0 });
      expect(shapeOf(ready)).toEqual(shapeOf(sample('my_orders')));
      expect(shapeOf(starting)).toEqual(shapeOf(sample('my_orders')));
      const [before] = starting.orders as Record<string, unknown>[];
      const [after] = ready.orders as Record<string, unknown>[];
      expect(before).not.toHaveProperty('status');
      expect(before).toMatchObject({
        si: server.id,
        online: false,
        expired: false,
        spot: true,
        currency: 'CLORE-Blockchain',
        ct: 1_714_608_000,
        mrl: server.mrl * 3_600,
      });
      expect(before?.pub_cluster).toEqual([expect.stringMatching(/^\S+$/)]);
      expect(before?.tcp_ports).toEqual([expect.stringMatching(/^22:\d+$/)]);
      expect(before?.gpu_array).toEqual([
        ' ' + server.gpu_array[0]?.replace(/^NVIDIA (GeForce )?/, ''),
        expect.any(String),
      ]);
      expect(after).toMatchObject({
        id: before?.id,
        online: true,
        expired: false,
        pub_cluster: before?.pub_cluster,
        tcp_ports: before?.tcp_ports,
      });
      expect(sim.control.orders()[0]?.order_id).toBe(before?.id);
    });

    it('marks cancelled orders expired, shown only with return_completed, like my_orders-empty.json otherwise', async () => {
      await rentSpot();
      const id = sim.control.orders()[0]?.order_id;
      const cancelled = await call('cancel_order', { body: { id } });
      const active = (await call('my_orders')).body;
      const all = (await call('my_orders', { query: 'return_completed=true' })).body;
      expect(cancelled.body).toEqual(sample('cancel_order'));
      expect(active).toEqual(sample('my_orders-empty'));
      expect(all.orders).toEqual([expect.objectContaining({ id, expired: true, online: false })]);
    });
  });

  describe('spot market', () => {
    it('answers spot_marketplace shaped like spot_marketplace.json, own orders marked my', async () => {
      // Prepare
      const { server, minimum } = await rentSpot();
      const id = sim.control.orders()[0]?.order_id;
      clock += 3_000;
      // Act
      const answer = await call('spot_marketplace', { query: `market=${server.id}` });
      // Assess
      const expected = sample('spot_marketplace') as { market: { offers: unknown[] } };
      // The sample has a second, foreign offer; the simulator's offers are all the account's own.
      expect(shapeOf(answer.body)).toEqual(
        shapeOf({ ...expected, market: { ...expected.market, offers: expected.market.offers.slice(0, 1) } }),
      );
      expect(answer.body).toMatchObject({
        code: 0,
        exists: true,
        market: {
          offers: [{ offer_id: id, bid: minimum * 2, active: true, my: true, currency: 'CLORE-Blockchain' }],
          server: {
            mrl: server.mrl,
            online: true,
            visibility: 'public',
            min_pricing: expect.objectContaining({ 'CLORE-Blockchain': minimum }),
          },
        },
      });
      expect(
        Object.keys((answer.body.market as { currency_rates_in_usd: object }).currency_rates_in_usd).sort(),
      ).toEqual(['CLORE-Blockchain', 'USD-Blockchain', 'bitcoin']);
    });

    it('words set_spot_price answers like the set_spot_price samples', async () => {
      // Prepare
      const { minimum } = await rentSpot();
      const orderId = sim.control.orders()[0]?.order_id;
      const setPrice = async (desired: number) =>
        (await call('set_spot_price', { body: { order_id: orderId, desired_price: desired } })).body;
      // Act
      const tooBig = await setPrice(minimum * 1.2);
      const done = await setPrice(minimum * 1.8);
      clock += 188_000;
      const tooSoon = await setPrice(minimum * 1.7);
      // Assess
      expect(done).toEqual(sample('set_spot_price'));
      expect(shapeOf(tooBig)).toEqual(shapeOf(sample('set_spot_price-exceeded-max-step')));
      expect(shapeOf(tooSoon)).toEqual(shapeOf(sample('set_spot_price-can-lower-every-600-seconds')));
      expect(tooSoon).toEqual({ code: 6, error: 'can_lower_every_600_seconds', time_to_lowering: 412 });
    });
  });

  it('answers a rate limit with HTTP 429 and the body of rate-limited-http429.json', async () => {
    const limited = await startSimulator({ dialect: 'live', minIntervalMs: 60_000 });
    try {
      const headers = { auth: limited.apiKey };
      await fetch(`${limited.url}/v1/wallets`, { headers });
      const res = await fetch(`${limited.url}/v1/wallets`, { headers });
      expect(res.status).toBe(429);
      expect(await res.json()).toEqual(sample('rate-limited-http429'));
    } finally {
      await limited.close();
    }
  });
});
