/** The GET /webhook/marketplace summary (order-relay.md §4.1). Pure. */
import type { Server } from './marketplace-types';

export interface MarketplaceGroup {
  readonly available: number;
  readonly total: number;
  /** Lowest USD-per-hour spot price (`price.usd_per_hour.spot`) in the group (rented servers included), null when none has one. */
  readonly min_price: number | null;
}

export interface MarketplaceSummary {
  readonly status: 'ok';
  readonly summary: Readonly<Record<string, MarketplaceGroup>>;
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

/**
 * Groups servers by {@link gpuGroupKey}. Available = not rented. Servers without GPUs (no
 * gpu_array, an empty one, or a blank first name) are skipped.
 *
 * Decision: `total_servers` and `total_available` count the summarized servers only, so they always
 * equal the sums over `summary`; a server that cannot be grouped is not a GPU offer a caller could
 * rent through this relay, and counting it would make the totals disagree with the groups.
 */
export const summarizeMarketplace = (servers: readonly Server[]): MarketplaceSummary => {
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
    total_servers: totalServers,
    total_available: totalAvailable,
  };
};
