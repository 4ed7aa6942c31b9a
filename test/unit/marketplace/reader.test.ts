/**
 * The reader's unit rules: USD prices per hour from the period each element's dialect shows (or
 * MARKETPLACE_PRICE_PERIOD), and older or odd shapes read as meant (issue 20, items 1 and 7).
 */
import type { Server } from '../../../lambdas/domain/marketplace-types';
import {
  gpusFromSpecs,
  readOrder,
  readServer,
  readServers,
  toUsdPerHour,
  usdPricePeriod,
} from '../../../lambdas/marketplace/reader';
import {
  LiveOrderElementSchema,
  ServerElementSchema,
  SpecOrderElementSchema,
  SpotMarketResponseSchema,
} from '../../../lambdas/marketplace/schemas';

/** A listing element in the shape of S9's 2024 listing: no gpu_array, no price.usd, GPUs in specs.gpu. */
const olderElement = (patch: Record<string, unknown> = {}): Record<string, unknown> => ({
  id: 25714,
  owner: 4727,
  mrl: 240,
  price: {
    on_demand: { bitcoin: 0.00009, 'CLORE-Blockchain': 30 },
    spot: { bitcoin: 0.00007, 'CLORE-Blockchain': 25 },
  },
  rented: false,
  specs: {
    cpu: 'AMD Ryzen 5 2600 Six-Core Processor',
    ram: 15.9107,
    disk: 'WDC 96.7951GB',
    gpu: '4x NVIDIA GeForce RTX 3080',
    gpuram: 10,
  },
  reliability: 0.071,
  allowed_coins: ['bitcoin', 'CLORE-Blockchain'],
  rating: { avg: 0, cnt: 0 },
  ...patch,
});

const server = (raw: unknown, options = {}): Server => {
  const read = readServer(raw, options);
  if (typeof read === 'string') throw new Error(`not read: ${read}`);
  return read;
};

const specElement = {
  ...olderElement(),
  gpu_array: ['NVIDIA GeForce RTX 3080'],
  price: { on_demand: {}, spot: {}, usd: { on_demand_native: 0.5, spot: 0.25 } },
};
const liveElement = {
  ...olderElement(),
  gpu_array: [' RTX 3080'],
  price: { on_demand: {}, spot: {}, usd: { on_demand_clore: 12, on_demand_btc: 12.24, spot: 6 } },
};

describe('USD prices per hour', () => {
  it('reads the spec dialect (on_demand_native) per hour and production (on_demand_<coin>) per day, element by element', () => {
    const { items } = readServers([specElement, liveElement]);
    expect(items[0]?.price.usd_per_hour).toEqual({
      on_demand: { 'NATIVE-Blockchain': 0.5, bitcoin: 0.5, 'CLORE-Blockchain': 0.5 },
      spot: 0.25,
    });
    expect(items[1]?.price.usd_per_hour).toEqual({ on_demand: { 'CLORE-Blockchain': 0.5, bitcoin: 0.51 }, spot: 0.25 });
  });

  it.each([
    ['hour', { 'CLORE-Blockchain': 12, bitcoin: 12.24 }, 6],
    ['day', { 'CLORE-Blockchain': 0.5, bitcoin: 0.51 }, 0.25],
  ] as const)('MARKETPLACE_PRICE_PERIOD=%s overrides the dialect of every element', (pricePeriod, onDemand, spot) => {
    expect(server(liveElement, { pricePeriod }).price.usd_per_hour).toEqual({ on_demand: onDemand, spot });
    const spec = server(specElement, { pricePeriod }).price.usd_per_hour;
    expect(spec.spot).toBe(pricePeriod === 'hour' ? 0.25 : toUsdPerHour(0.25, 'day'));
  });

  it('keeps the crypto maps in the marketplace unit: the spot bid is unchanged', () => {
    const withCrypto = {
      ...liveElement,
      price: { ...(olderElement().price as object), usd: { on_demand_clore: 12, spot: 6 } },
    };
    expect(server(withCrypto).price).toMatchObject({
      spot: { bitcoin: 0.00007, 'CLORE-Blockchain': 25 },
      on_demand: { bitcoin: 0.00009, 'CLORE-Blockchain': 30 },
    });
  });

  it('states no USD price when the period cannot be told (only `spot`, no on_demand key) and none is configured', () => {
    const onlySpot = { ...liveElement, price: { on_demand: {}, spot: {}, usd: { spot: 6 } } };
    expect(server(onlySpot).price.usd_per_hour).toEqual({ on_demand: {} });
    expect(server(onlySpot, { pricePeriod: 'day' }).price.usd_per_hour).toEqual({ on_demand: {}, spot: 0.25 });
  });

  it('recognises the period from the keys', () => {
    expect(usdPricePeriod({ on_demand_native: 1, spot: 1 })).toBe('hour');
    expect(usdPricePeriod({ on_demand_clore: 1, spot: 0 })).toBe('day');
    expect(usdPricePeriod({ on_demand_native: 1, on_demand_usd: 1 })).toBe('day');
    expect(usdPricePeriod({ spot: 1 })).toBeUndefined();
    expect(usdPricePeriod(undefined)).toBeUndefined();
  });

  it('divides per-day prices by 24, to 6 significant digits', () => {
    expect(toUsdPerHour(10, 'day')).toBe(0.416667);
    expect(toUsdPerHour(0.05, 'day')).toBe(0.00208333);
    expect(toUsdPerHour(0.35, 'hour')).toBe(0.35);
  });
});

describe('older and odd shapes are read, not skipped', () => {
  it('takes GPUs from specs.gpu when gpu_array is missing: "4x NVIDIA GeForce RTX 3080" is four cards', () => {
    expect(server(olderElement()).gpu_array).toEqual(Array(4).fill('NVIDIA GeForce RTX 3080'));
    expect(server(olderElement({ specs: { gpu: '2x NVIDIA GeForce RTX 3080' } })).gpu_array).toEqual([
      'NVIDIA GeForce RTX 3080',
      'NVIDIA GeForce RTX 3080',
    ]);
  });

  it.each([
    ['2x NVIDIA GeForce RTX 3080', ['NVIDIA GeForce RTX 3080', 'NVIDIA GeForce RTX 3080']],
    ['NVIDIA A100', ['NVIDIA A100']],
    ['1 x RTX 4090', ['RTX 4090']],
    ['1x RTX 4090, 2x RTX 3090', ['RTX 4090', 'RTX 3090', 'RTX 3090']],
    ['', []],
    ['0x RTX 4090', []],
    ['1000x RTX 4090', []],
  ])('specs.gpu %p → %p', (text, gpus) => {
    expect(gpusFromSpecs(text)).toEqual(gpus);
  });

  it('also falls back to specs.gpu when gpu_array is empty, blank or not a list of names', () => {
    for (const gpuArray of [[], ['  '], 'RTX 3080', [1, 2]]) {
      expect(
        server(olderElement({ gpu_array: gpuArray, specs: { gpu: '1x NVIDIA GeForce RTX 3080' } })).gpu_array,
      ).toEqual(['NVIDIA GeForce RTX 3080']);
    }
  });

  it('still skips an element with neither, naming why', () => {
    expect(readServer(olderElement({ specs: { gpu: '' } }))).toBe('no GPU names (neither gpu_array nor specs.gpu)');
  });

  it('flattens a gpu_array of lists', () => {
    expect(server(olderElement({ gpu_array: [[' RTX 3080', ' RTX 3080'], [' RTX 3090']] })).gpu_array).toEqual([
      'RTX 3080',
      'RTX 3080',
      'RTX 3090',
    ]);
  });

  it.each([
    [0, false],
    [1, true],
    ['true', true],
    ['false', false],
    ['0', false],
    ['1', true],
    [true, true],
    [false, false],
  ])('listing rented %p reads as %p; anything unreadable counts as rented', (rented, expected) => {
    expect(server(olderElement({ rented })).rented).toBe(expected);
    expect(server(olderElement({ rented: 'maybe' })).rented).toBe(true);
  });

  const liveOrder = {
    id: 77,
    si: 25714,
    ct: 1714608000,
    price: 25,
    currency: 'CLORE-Blockchain',
    spot: true,
    pub_cluster: ['n1.example'],
    tcp_ports: ['22:1277'],
  };

  it.each([
    [0, 'creating_order'],
    ['false', 'creating_order'],
    ['0', 'creating_order'],
    [false, 'creating_order'],
    [1, 'running'],
    ['true', 'running'],
    [true, 'running'],
  ])('order online %p reads as %s', (online, status) => {
    expect(readOrder({ ...liveOrder, online })).toMatchObject({ status });
  });

  it('order expired 1 / "true" reads as expired; spot "1" as a spot order', () => {
    expect(readOrder({ ...liveOrder, expired: 1 })).toMatchObject({ status: 'expired' });
    expect(readOrder({ ...liveOrder, expired: 'true' })).toMatchObject({ status: 'expired' });
    expect(readOrder({ ...liveOrder, spot: '1' })).toMatchObject({ type: 'spot' });
    expect(readOrder({ ...liveOrder, spot: 0 })).toMatchObject({ type: 'on-demand' });
  });

  it('a numeric string ct is a number', () => {
    expect(readOrder({ ...liveOrder, ct: '1714608000' })).toMatchObject({ created: 1714608000, started: 1714608000 });
    expect(readOrder({ ...liveOrder, ct: ' 1714608000.5 ' })).toMatchObject({ created: 1714608000 });
    expect(readOrder({ ...liveOrder, ct: 'soon' })).toMatchObject({ created: 0 });
  });

  it.each([[{ code: 0 }], [{ code: 0, exists: false }], [{ code: 0, market: null }]])(
    'a spot_marketplace answer %p without a market is "no market" (null), not an error',
    (body) => {
      expect(SpotMarketResponseSchema().parse(body).market).toBeNull();
    },
  );
});

describe('fields of the wrong type fall back to their safe values (schemas.ts `fallback`)', () => {
  it('a listing element keeps its id with owner, reliability, rating, coins and specs at their fallbacks', () => {
    const read = ServerElementSchema().parse(
      olderElement({ owner: 'x', reliability: 'high', rating: 5, allowed_coins: 'bitcoin', specs: 7, mrl: -1 }),
    );
    expect(read).toMatchObject({
      id: 25714,
      owner: 0,
      mrl: 0,
      reliability: 0,
      rating: { avg: 0, cnt: 0 },
      allowed_coins: [],
      specs: { gpu: '', cpu: '', ram: 0, disk: '' },
    });
  });

  it.each([
    [
      'production',
      LiveOrderElementSchema(),
      { id: 7, si: 25714, ct: 1, price: '1', currency: 3, tcp_ports: 'x', spend: 'a' },
      { id: 7, si: 25714, price: 0, currency: '', tcp_ports: [] },
    ],
    [
      'spec',
      SpecOrderElementSchema(),
      {
        order_id: 7,
        renting_server: 25714,
        status: 'running',
        created: 1,
        price: '1',
        currency: 3,
        type: 5,
        started: 'x',
      },
      { order_id: 7, renting_server: 25714, price: 0, currency: '', type: 'on-demand', started: 0, connection: {} },
    ],
  ] as const)(
    'a %s order keeps its ids with the other fields at their fallbacks, and no spend',
    (_, schema, raw, read) => {
      const parsed: Record<string, unknown> = schema.parse(raw);
      expect(parsed).toMatchObject(read);
      expect(parsed.spend).toBeUndefined();
    },
  );
});
