/**
 * The simulator's marketplace catalogue, generated deterministically from a seed: the same seed
 * always yields the same servers, so tests and local runs are reproducible.
 *
 * Which servers are offline, lack a spot market or accept which coins follows the index (so every
 * seed has some of each); GPU counts, prices, rented flags, reliability and ratings follow the seed.
 */
/**
 * A listing element in the spec's shape (marketplace-api.md §2.1). The simulator keeps its own wire
 * type: the relay's domain `Server` is what the reader makes of either dialect, not what is sent.
 */
export interface Server {
  readonly id: number;
  readonly owner: number;
  readonly mrl: number;
  readonly rented: boolean;
  readonly price: {
    readonly on_demand: Readonly<Record<string, number>>;
    readonly spot: Readonly<Record<string, number>>;
    readonly usd: { readonly on_demand_native?: number; readonly spot?: number };
  };
  readonly specs: { readonly gpu: string; readonly cpu: string; readonly ram: number; readonly disk: string };
  readonly gpu_array: readonly string[];
  readonly reliability: number;
  readonly rating: { readonly avg: number; readonly cnt: number };
  readonly allowed_coins: readonly string[];
}

/** A catalogue server: the API's Server plus simulator state the API does not list. */
export interface SimServer extends Server {
  /** Offline servers are listed but refuse orders with server-offline. */
  readonly online: boolean;
}

/** Deterministic PRNG (mulberry32). */
export const seededRandom = (seed: number): (() => number) => {
  let state = seed >>> 0;
  return () => {
    state = (state + 0x6d2b79f5) >>> 0;
    let t = state;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
};

export interface GpuModel {
  readonly name: string;
  readonly usdPerHour: number;
  readonly cpu: string;
  readonly ramPerGpu: number;
  /** Memory per card in GB (the live dialect's `specs.gpuram`). */
  readonly memGb: number;
}

/** GPU models with a rough on-demand USD/h per card. */
export const GPU_MODELS: readonly GpuModel[] = [
  {
    name: 'NVIDIA GeForce RTX 4090',
    usdPerHour: 0.35,
    cpu: 'AMD Ryzen 9 7950X 16-Core Processor',
    ramPerGpu: 32,
    memGb: 24,
  },
  {
    name: 'NVIDIA GeForce RTX 3090',
    usdPerHour: 0.2,
    cpu: 'AMD Ryzen 9 5950X 16-Core Processor',
    ramPerGpu: 32,
    memGb: 24,
  },
  { name: 'NVIDIA A100 80GB PCIe', usdPerHour: 1.1, cpu: 'AMD EPYC 7763 64-Core Processor', ramPerGpu: 128, memGb: 80 },
  { name: 'NVIDIA H100 80GB HBM3', usdPerHour: 2.2, cpu: 'Intel(R) Xeon(R) Platinum 8480+', ramPerGpu: 192, memGb: 80 },
  { name: 'NVIDIA RTX A6000', usdPerHour: 0.5, cpu: 'AMD EPYC 7543 32-Core Processor', ramPerGpu: 64, memGb: 48 },
  { name: 'NVIDIA L40S', usdPerHour: 0.8, cpu: 'Intel(R) Xeon(R) Gold 6338 CPU @ 2.00GHz', ramPerGpu: 96, memGb: 48 },
  {
    name: 'NVIDIA GeForce RTX 3080',
    usdPerHour: 0.12,
    cpu: 'Intel(R) Core(TM) i9-10900K CPU @ 3.70GHz',
    ramPerGpu: 16,
    memGb: 10,
  },
];

/** Exchange rates used to express USD prices in each coin (per day, as the CLI documents). */
export const USD_PER = { bitcoin: 60_000, 'NATIVE-Blockchain': 0.02, 'USD-Blockchain': 1 } as const;

const COIN_SETS: readonly (readonly string[])[] = [
  ['bitcoin', 'NATIVE-Blockchain', 'USD-Blockchain'],
  ['NATIVE-Blockchain', 'bitcoin'],
  ['NATIVE-Blockchain'],
  ['bitcoin', 'USD-Blockchain'],
];

const round = (value: number, digits: number): number => Number(value.toFixed(digits));
const perDay = (usdPerHour: number, coin: keyof typeof USD_PER): number =>
  round((usdPerHour * 24) / USD_PER[coin], coin === 'bitcoin' ? 8 : 4);

/** First server id; ids are consecutive. */
export const FIRST_SERVER_ID = 1000;
export const DEFAULT_SERVER_COUNT = 40;

/**
 * Builds the catalogue. Index rules: every 9th server (from 4) is offline, every 5th (from 3) has no
 * spot market, the last two have no GPU (summary code must skip them), coins cycle through COIN_SETS.
 */
export const buildCatalogue = (seed: number, count = DEFAULT_SERVER_COUNT): SimServer[] => {
  const random = seededRandom(seed);
  const pick = <T>(items: readonly T[]): T => items[Math.floor(random() * items.length)] as T;
  const servers: SimServer[] = [];
  for (let i = 0; i < count; i += 1) {
    const gpuless = i >= count - 2;
    const model = GPU_MODELS[i % GPU_MODELS.length] as GpuModel;
    const gpus = gpuless ? 0 : pick([1, 1, 2, 2, 4, 8]);
    const factor = 0.8 + random() * 0.4;
    const onDemandUsd = round((gpuless ? 0.05 : model.usdPerHour * gpus) * factor, 4);
    const hasSpot = i % 5 !== 3;
    const spotUsd = round(onDemandUsd * (0.5 + random() * 0.2), 4);
    const ram = gpuless ? 64 : model.ramPerGpu * gpus;
    servers.push({
      id: FIRST_SERVER_ID + i,
      owner: 100 + Math.floor(random() * 20),
      mrl: pick([24, 72, 168, 720]),
      rented: random() < 0.2,
      online: i % 9 !== 4,
      price: {
        on_demand: {
          bitcoin: perDay(onDemandUsd, 'bitcoin'),
          'NATIVE-Blockchain': perDay(onDemandUsd, 'NATIVE-Blockchain'),
          'USD-Blockchain': perDay(onDemandUsd, 'USD-Blockchain'),
        },
        spot: hasSpot
          ? { bitcoin: perDay(spotUsd, 'bitcoin'), 'NATIVE-Blockchain': perDay(spotUsd, 'NATIVE-Blockchain') }
          : {},
        usd: hasSpot ? { on_demand_native: onDemandUsd, spot: spotUsd } : { on_demand_native: onDemandUsd },
      },
      specs: {
        gpu: gpuless ? '' : `${gpus}x ${model.name}`,
        cpu: gpuless ? 'AMD EPYC 7302 16-Core Processor' : model.cpu,
        ram: round(ram - random() * 2, 2),
        disk: `${pick(['Samsung SSD 980 PRO', 'WD_BLACK SN850X', 'KINGSTON SA2000M8'])} ${pick([500, 1000, 2000])}GB`,
      },
      gpu_array: Array.from({ length: gpus }, () => model.name),
      reliability: round(0.85 + random() * 0.15, 4),
      rating: { avg: round(3.5 + random() * 1.5, 2), cnt: Math.floor(random() * 200) },
      allowed_coins: [...(COIN_SETS[i % COIN_SETS.length] as readonly string[])],
    });
  }
  return servers;
};

/** Starting wallet balances (per currency). */
export const INITIAL_WALLETS: Readonly<Record<string, number>> = {
  'NATIVE-Blockchain': 250_000,
  bitcoin: 0.05,
  'USD-Blockchain': 200,
};
