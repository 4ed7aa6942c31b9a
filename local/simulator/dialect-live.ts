/**
 * The `live` dialect: the marketplace as production answers (spec/marketplace-live.md, samples in
 * spec/live-v1/). `CLORE-Blockchain` is the native coin, `gpu_array` entries are `" <model>"`,
 * `price.usd` has one `on_demand_<coin>` per payment coin and, like every production price, is per
 * day (the spec dialect's is per hour), create_order answers `{code: 0}` only,
 * orders are `{id, si, ct, online, expired, pub_cluster, tcp_ports, …}` without `status`, missing
 * keys and rate limits are HTTP 401 and 429.
 */
import { GPU_MODELS, seededRandom, USD_PER, type SimServer } from './catalogue';
import { mappedPort, orderHost, SPEC_NATIVE_COIN, type DialectRenderer } from './dialect';
import { chargedUnits, type SimOrder } from './marketplace-state';

export const LIVE_NATIVE_COIN = 'CLORE-Blockchain';
/** A coin the live marketplace does not know: the spec's native coin sent to it stays unknown. */
const UNKNOWN_IN_LIVE = `${SPEC_NATIVE_COIN} (unknown to the live marketplace)`;

/** `price.usd.on_demand_<slug>` per (state) coin name. */
const USD_SLUG: Readonly<Record<string, string>> = {
  [SPEC_NATIVE_COIN]: 'clore',
  bitcoin: 'btc',
  'USD-Blockchain': 'usd',
};
/** Paying in another coin costs a little more in USD (so readers must pick the right key). */
const USD_SPREAD: Readonly<Record<string, number>> = { [SPEC_NATIVE_COIN]: 1, bitcoin: 1.02, 'USD-Blockchain': 1.03 };
const WITHDRAWAL_FEE: Readonly<Record<string, number>> = {
  [SPEC_NATIVE_COIN]: 10,
  bitcoin: 0.0001,
  'USD-Blockchain': 1,
};
/** Board power limit per card (W), by model name; other models get 300. */
const POWER_LIMIT: Readonly<Record<string, number>> = {
  'RTX 4090': 450,
  'RTX 3090': 350,
  'RTX 3080': 320,
  'H100 80GB HBM3': 700,
};
/** Production's renter fee on every price unit, and its creation fee per order in USD (marketplace-live.md, third round). */
export const LIVE_RENTER_FEE = 0.05;
export const LIVE_CREATION_FEE_USD = 0.1;
/** my_orders' `limit` (concurrent orders allowed to the account). */
const ORDER_LIMIT = 16;

const coinOut = (coin: string): string => (coin === SPEC_NATIVE_COIN ? LIVE_NATIVE_COIN : coin);
const coinIn = (coin: string): string =>
  coin === LIVE_NATIVE_COIN ? SPEC_NATIVE_COIN : coin === SPEC_NATIVE_COIN ? UNKNOWN_IN_LIVE : coin;

const round = (value: number, digits: number): number => Number(value.toFixed(digits));
const seconds = (ms: number): number => Math.floor(ms / 1000);

/** "NVIDIA GeForce RTX 4090" → "RTX 4090": production lists models without the vendor. */
const shortModel = (name: string): string => name.replace(/^NVIDIA\s+(GeForce\s+)?/, '');

/** A crypto price map in live coin names, limited to the coins the server takes (so maps are partial). */
const coinPrices = (map: Readonly<Record<string, number>>, allowed: readonly string[]): Record<string, number> =>
  Object.fromEntries(
    Object.entries(map)
      .filter(([coin]) => allowed.includes(coin))
      .map(([coin, value]) => [coinOut(coin), value]),
  );

/** The live `specs` object, the catalogue's specs plus hardware details derived from the server id. */
const liveSpecs = (server: SimServer): Record<string, unknown> => {
  const random = seededRandom(server.id * 7_919);
  const pick = <T>(items: readonly T[]): T => items[Math.floor(random() * items.length)] as T;
  const model = GPU_MODELS.find((m) => m.name === server.gpu_array[0]);
  const short = model ? shortModel(model.name) : '';
  const watts = POWER_LIMIT[short] ?? 300;
  const cores = /(\d+)-Core/.exec(server.specs.cpu)?.[1];
  const pcieGen = pick([3, 4, 4, 5]);
  return {
    mb: pick(['X570 AORUS ELITE', 'ROG STRIX B550-F GAMING', 'H12SSL-i', 'MZ32-AR0', 'Z690 AORUS PRO']),
    cpu: server.specs.cpu,
    cpus: cores ? `${cores}/${Number(cores) * 2}` : '32/64',
    ram: server.specs.ram,
    gpu: server.specs.gpu,
    gpuram: model?.memGb ?? 0,
    disk: server.specs.disk,
    disk_speed: round(1_500 + random() * 5_000, 1),
    net: {
      cc: pick(['DE', 'US', 'FI', 'CZ', 'PL', 'NL', 'CA']),
      down: round(100 + random() * 900, 1),
      up: round(50 + random() * 450, 1),
      test_history: [],
    },
    backend_version: 17,
    pcie_rev: pcieGen,
    pcie_width: 16,
    xfs: 1,
    stock_oc_override: false,
    pl: server.gpu_array.map(() => watts),
    gpus: server.gpu_array.map(() => ({ type: short, mem: model?.memGb ?? 0, pcie_gen: pcieGen, pcie_width: 16 })),
    stock_pl: server.gpu_array.map(() => watts),
    stock_oc: 'default',
  };
};

/** Production states every price per day, `price.usd.*` included (marketplace-live.md, S6–S8); the catalogue's USD is per hour. */
const HOURS_PER_DAY = 24;
const usdPerDay = (usdPerHour: number): number => round(usdPerHour * HOURS_PER_DAY, 4);

const usdSpot = (server: SimServer, spot: Readonly<Record<string, number>>): number =>
  Object.keys(spot).length > 0 ? usdPerDay(server.price.usd.spot ?? 0) : 0;

const liveServer = (server: SimServer, legacy: boolean): Record<string, unknown> => {
  const onDemand = coinPrices(server.price.on_demand, server.allowed_coins);
  const spot = coinPrices(server.price.spot, server.allowed_coins);
  const base = usdPerDay(server.price.usd.on_demand_native ?? 0);
  const usd = {
    ...Object.fromEntries(
      server.allowed_coins
        .filter((c) => USD_SLUG[c])
        .map((c) => [`on_demand_${USD_SLUG[c]}`, round(base * (USD_SPREAD[c] ?? 1), 4)]),
    ),
    spot: usdSpot(server, spot),
  };
  const first = server.allowed_coins.includes(SPEC_NATIVE_COIN)
    ? SPEC_NATIVE_COIN
    : (server.allowed_coins[0] ?? SPEC_NATIVE_COIN);
  return {
    id: server.id,
    owner: server.owner,
    autoprice: 'usd',
    mrl: server.mrl,
    // An older answer (S2 in marketplace-live.md) has neither `price.usd` nor `gpu_array`.
    price: legacy
      ? { on_demand: onDemand, spot }
      : {
          on_demand: onDemand,
          spot,
          usd,
          original_usd: { [coinOut(first)]: { on_demand: base, spot: usdPerDay(server.price.usd.spot ?? 0) } },
        },
    rented: server.rented,
    specs: liveSpecs(server),
    reliability: server.reliability,
    allowed_coins: server.allowed_coins.map(coinOut),
    rating: { ...server.rating },
    ...(legacy ? {} : { gpu_array: server.gpu_array.map((name) => ` ${shortModel(name)}`) }),
    gigaspot: false,
    oc: false,
    cuda_version: '12.4',
    partial_gpu_rental: false,
  };
};

const liveOrder = (order: SimOrder, server: SimServer | undefined, now: number): Record<string, unknown> => {
  const host = orderHost(order);
  const tcp = [
    '22',
    ...Object.entries(order.ports)
      .filter(([port, proto]) => proto === 'tcp' && port !== '22')
      .map(([port]) => port),
  ];
  const httpPort = Object.entries(order.ports).find(([, proto]) => proto === 'http')?.[0] ?? '8888';
  const usd = server ? (order.type === 'spot' ? server.price.usd.spot : server.price.usd.on_demand_native) : undefined;
  return {
    id: order.order_id,
    creation_fee: LIVE_CREATION_FEE_USD,
    price: order.price,
    mrl: order.mrlHours * 3_600,
    image: order.image,
    currency: coinOut(order.currency),
    original_price_usd: usdPerDay(usd ?? 0),
    // Each price step × the time run at it, per day, plus the renter fee (order 1957892: ≈ price/24 × hours × 1.05).
    spend: round(chargedUnits(order, now, HOURS_PER_DAY * 3_600_000) * (1 + LIVE_RENTER_FEE), 8),
    ct: seconds(order.createdMs),
    specs: server ? liveSpecs(server) : {},
    si: order.renting_server,
    auto_login: `https://sim.invalid/auto_login/${order.order_id}`,
    mon_container: 1,
    online: order.phase === 'running',
    pub_cluster: [host],
    tcp_ports: tcp.map((port) => `${port}:${mappedPort(order, port)}`),
    http_port: httpPort,
    http_pub: `o${order.order_id}.http.sim.invalid`,
    rating: server ? { ...server.rating } : { avg: 0, cnt: 0 },
    reliability: server?.reliability ?? 0,
    owner: server?.owner ?? 0,
    cuda_version: '12.4',
    gpu_array: (server?.gpu_array ?? []).map((name) => ` ${shortModel(name)}`),
    spot: order.type === 'spot',
    expired: order.phase === 'expired',
  };
};

export const liveDialect: DialectRenderer = {
  name: 'live',
  nativeCoin: LIVE_NATIVE_COIN,
  pricePeriodHours: HOURS_PER_DAY,
  fees: { renter: LIVE_RENTER_FEE, creationUsd: LIVE_CREATION_FEE_USD },
  coinOut,
  coinIn,
  httpStatus: (code) => (code === 3 ? 401 : code === 5 ? 429 : 200),
  marketplace: (servers) => {
    // One element in the older style: the last server without GPUs (readers skip it anyway).
    const legacyId = servers.filter((s) => s.gpu_array.length === 0).at(-1)?.id;
    return { code: 0, servers: servers.map((s) => liveServer(s, s.id === legacyId)), my_servers: [] };
  },
  wallets: (balances) => ({
    code: 0,
    wallets: balances.map(([name, balance]) => ({
      name: coinOut(name),
      deposit: `sim-deposit-${coinOut(name)}`,
      balance,
      withdrawal_fee: WITHDRAWAL_FEE[name] ?? 0,
    })),
  }),
  createOrder: () => ({ code: 0 }),
  myOrders: (orders, serverOf, now) => ({
    code: 0,
    orders: orders.map((o) => liveOrder(o, serverOf(o.renting_server), now)),
    limit: ORDER_LIMIT,
  }),
  done: () => ({ code: 0 }),
  spotMarket: (server, offers) => ({
    code: 0,
    exists: true,
    market: {
      currency_rates_in_usd: Object.fromEntries(Object.entries(USD_PER).map(([coin, rate]) => [coinOut(coin), rate])),
      // Every order the simulator holds is the account's own.
      offers: offers.map((o) => ({
        offer_id: o.order_id,
        bid: o.price,
        active: o.phase === 'running',
        my: true,
        currency: coinOut(o.currency),
      })),
      server: {
        min_pricing: coinPrices(server.price.spot, server.allowed_coins),
        mrl: server.mrl,
        online: server.online,
        visibility: 'public',
      },
    },
  }),
  refusal: (refusal) => {
    switch (refusal.kind) {
      case 'invalid':
        return { code: 2 };
      case 'rejected':
        return refusal.reason === 'too_low_price' && refusal.minPrice !== undefined
          ? { code: 6, error: refusal.reason, min_price: refusal.minPrice }
          : { code: 6, error: refusal.reason };
      case 'step-too-big':
      case 'raise-too-big':
        return { code: 6, error: 'exceeded_max_step', max_step: round(refusal.maxStep, 8) };
      case 'decrease-too-soon':
        return { code: 6, error: 'can_lower_every_600_seconds', time_to_lowering: Math.ceil(refusal.waitMs / 1000) };
    }
  },
};
