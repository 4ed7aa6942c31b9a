/**
 * The GET /webhook/marketplace summary (order-relay.md §4.1), plus `models` (issue 28): the same
 * servers keyed by the model name a caller passes as `gpu_type`. Pure.
 */
import type { Server } from './marketplace-types';
import { allInUsdPerHour, NO_FEES, type MarketplaceFees } from './teams/spend-budget';

export interface MarketplaceGroup {
  readonly available: number;
  readonly total: number;
  /** Lowest USD-per-hour spot price (`price.usd_per_hour.spot`) in the group (rented servers included), null when none has one. */
  readonly min_price: number | null;
}

/** One GPU model (issue 28): what `gpu_type` rents it, how many servers, the lowest prices. */
export interface MarketplaceModel {
  readonly available: number;
  readonly total: number;
  /** Lowest prices in USD per hour among the model's available servers, null when none states one. */
  readonly min_price_usd_per_hour: { readonly spot: number | null; readonly on_demand: number | null };
  /** The same prices with the renter fee (RENTER_FEE_PERCENT): price × (1 + fee), per hour (issue 31 §6). */
  readonly all_in_usd_per_hour: { readonly spot: number | null; readonly on_demand: number | null };
  /** ORDER_CREATION_FEE_USD: charged once per order placed, beside the hourly price (issue 31 §6). */
  readonly creation_fee_usd: number;
}

export interface MarketplaceSummary {
  readonly status: 'ok';
  readonly summary: Readonly<Record<string, MarketplaceGroup>>;
  /** Keyed by the model name to pass as `gpu_type` (e.g. `RTX 4090`), cheapest spot price first. */
  readonly models: Readonly<Record<string, MarketplaceModel>>;
  readonly total_servers: number;
  readonly total_available: number;
}

/** The group key: the first whitespace-separated word of the server's first GPU name, if any. */
export const gpuGroupKey = (server: Pick<Server, 'gpu_array'>): string | undefined => {
  const first = Array.isArray(server.gpu_array) ? server.gpu_array[0] : undefined;
  if (typeof first !== 'string') return undefined;
  const word = first.trim().split(/\s+/)[0];
  return word ? word : undefined;
};

/** Words of a GPU name that only say who made it: a caller leaves them out of `gpu_type`. */
const MAKER_WORDS = new Set(['nvidia', 'geforce', 'amd', 'radeon', 'intel']);

/**
 * The model name a caller passes as `gpu_type` for a GPU name: the name without its maker's words
 * (`NVIDIA GeForce RTX 4090` → `RTX 4090`, `NVIDIA A100 80GB PCIe` → `A100 80GB PCIe`). Matching is
 * a case-insensitive substring of the GPU name (./matching.ts), so the model name always matches it.
 */
export const gpuModelName = (gpuName: string): string | undefined => {
  const words = gpuName.trim().split(/\s+/).filter(Boolean);
  let first = 0;
  while (first < words.length - 1 && MAKER_WORDS.has(words[first].toLowerCase())) first += 1;
  const name = words.slice(first).join(' ');
  return name ? name : undefined;
};

/** The distinct model names of a listing, in listing order (servers without GPUs have none). */
export const listedModels = (servers: readonly Pick<Server, 'gpu_array'>[]): string[] => [
  ...new Set(
    servers.flatMap((server) =>
      (Array.isArray(server.gpu_array) ? server.gpu_array : [])
        .map((gpu) => (typeof gpu === 'string' ? gpuModelName(gpu) : undefined))
        .filter((name): name is string => name !== undefined),
    ),
  ),
];

const lowest = (current: number | null, value: unknown): number | null =>
  typeof value === 'number' && Number.isFinite(value) && value > 0 && (current === null || value < current)
    ? value
    : current;

/**
 * Groups servers by model name ({@link gpuModelName} of the first GPU). Prices are the lowest among
 * available servers (what a caller could rent now), spot and on-demand (any currency) in USD per hour.
 * Sorted by the lowest spot price, then on-demand, then name; a model with no price comes last.
 */
export const summarizeModels = (
  servers: readonly Server[],
  fees: MarketplaceFees = NO_FEES,
): Record<string, MarketplaceModel> => {
  const allIn = (usd: number | null): number | null => (usd === null ? null : allInUsdPerHour(usd, fees));
  const models = new Map<string, { available: number; total: number; spot: number | null; on_demand: number | null }>();
  for (const server of servers) {
    const first = Array.isArray(server.gpu_array) ? server.gpu_array[0] : undefined;
    const name = typeof first === 'string' ? gpuModelName(first) : undefined;
    if (name === undefined) continue;
    const model = models.get(name) ?? { available: 0, total: 0, spot: null, on_demand: null };
    model.total += 1;
    if (!server.rented) {
      model.available += 1;
      model.spot = lowest(model.spot, server.price?.usd_per_hour?.spot);
      for (const usd of Object.values(server.price?.usd_per_hour?.on_demand ?? {}))
        model.on_demand = lowest(model.on_demand, usd);
    }
    models.set(name, model);
  }
  const price = (m: { spot: number | null; on_demand: number | null }): number =>
    m.spot ?? m.on_demand ?? Number.POSITIVE_INFINITY;
  return Object.fromEntries(
    [...models]
      .sort(
        ([an, a], [bn, b]) =>
          price(a) - price(b) || (a.on_demand ?? Infinity) - (b.on_demand ?? Infinity) || an.localeCompare(bn),
      )
      .map(([name, m]) => [
        name,
        {
          available: m.available,
          total: m.total,
          min_price_usd_per_hour: { spot: m.spot, on_demand: m.on_demand },
          all_in_usd_per_hour: { spot: allIn(m.spot), on_demand: allIn(m.on_demand) },
          creation_fee_usd: fees.creation_fee_usd,
        },
      ]),
  );
};

/**
 * Groups servers by {@link gpuGroupKey}. Available = not rented. Servers without GPUs (no
 * gpu_array, an empty one, or a blank first name) are skipped.
 *
 * Decision: `total_servers` and `total_available` count the summarized servers only, so they always
 * equal the sums over `summary`; a server that cannot be grouped is not a GPU offer a caller could
 * rent through this relay, and counting it would make the totals disagree with the groups.
 */
export const summarizeMarketplace = (
  servers: readonly Server[],
  fees: MarketplaceFees = NO_FEES,
): MarketplaceSummary => {
  const groups = new Map<string, { available: number; total: number; min_price: number | null }>();
  let totalServers = 0;
  let totalAvailable = 0;
  for (const server of servers) {
    const key = gpuGroupKey(server);
    if (key === undefined) continue;
    const group = groups.get(key) ?? { available: 0, total: 0, min_price: null };
    group.total += 1;
    totalServers += 1;
    if (!server.rented) {
      group.available += 1;
      totalAvailable += 1;
    }
    const spot = server.price?.usd_per_hour?.spot;
    if (typeof spot === 'number' && Number.isFinite(spot) && (group.min_price === null || spot < group.min_price)) {
      group.min_price = spot;
    }
    groups.set(key, group);
  }
  // Object.fromEntries defines own properties, so a GPU named "__proto__" cannot touch the prototype.
  return {
    status: 'ok',
    summary: Object.fromEntries(groups),
    models: summarizeModels(servers, fees),
    total_servers: totalServers,
    total_available: totalAvailable,
  };
};
