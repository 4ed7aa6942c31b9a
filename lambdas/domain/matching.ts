/**
 * Server matching for create-order and price-alert (DESIGN.md "Server matching"). Pure: the
 * listing comes in, the chosen server goes out; the order of the listing is the marketplace's.
 */
import { listedModels } from './marketplace-summary';
import type { Server } from './marketplace-types';
import { spotBidFor } from './spot-bid';

/** What a caller asks for. `max_price` is USD per hour. */
export interface MatchCriteria {
  readonly gpu_type: string;
  /** Inclusive cap in USD/h: compared with usd.spot (spot) or the on-demand USD price in the order currency. */
  readonly max_price?: number;
  readonly currency: string;
  readonly use_spot: boolean;
  /** Server ids this task already tried (rejected as rented/offline). */
  readonly exclude?: readonly number[];
  /** Server ids other running tasks hold (server claims). */
  readonly claimed?: ReadonlySet<number> | readonly number[];
}

const asSet = (ids: ReadonlySet<number> | readonly number[] | undefined): ReadonlySet<number> =>
  ids === undefined ? new Set() : Array.isArray(ids) ? new Set(ids) : (ids as ReadonlySet<number>);

/** The USD/h price the cap is compared with, or undefined when the server does not state it. */
export const comparablePriceUsd = (server: Server, useSpot: boolean, currency: string): number | undefined =>
  useSpot ? server.price.usd_per_hour.spot : server.price.usd_per_hour.on_demand[currency];

/** Whether one server satisfies the criteria (ignoring exclusions). */
export const serverMatches = (server: Server, criteria: MatchCriteria): boolean => {
  if (server.rented) return false;
  const wanted = criteria.gpu_type.trim().toLowerCase();
  if (wanted.length === 0) return false;
  if (!server.gpu_array.some((gpu) => gpu.toLowerCase().includes(wanted))) return false;
  if (!server.allowed_coins.includes(criteria.currency)) return false;
  // A spot order needs a bid, and the bid is derived from the spot price in the order currency: a
  // server without a positive one there is not a spot candidate (the next one is tried).
  if (criteria.use_spot && spotBidFor(server, criteria.currency) === undefined) return false;
  if (criteria.max_price !== undefined) {
    const price = comparablePriceUsd(server, criteria.use_spot, criteria.currency);
    // A server that does not state the compared price cannot be shown to be under the cap.
    if (typeof price !== 'number' || price > criteria.max_price) return false;
  }
  return true;
};

/** Every matching server, in marketplace order, without the excluded and claimed ones. */
export const findMatchingServers = (servers: readonly Server[], criteria: MatchCriteria): Server[] => {
  const excluded = asSet(criteria.exclude);
  const claimed = asSet(criteria.claimed);
  return servers.filter((s) => !excluded.has(s.id) && !claimed.has(s.id) && serverMatches(s, criteria));
};

/** The first matching server in marketplace order, or undefined. Shared by create-order and price-alert. */
export const findMatchingServer = (servers: readonly Server[], criteria: MatchCriteria): Server | undefined =>
  findMatchingServers(servers, criteria)[0];

/** The spec's no-match text: "No <gpu_type> available under $<max_price>/hr", without the price part when uncapped. */
export const noMatchMessage = (gpuType: string, maxPrice?: number): string =>
  maxPrice === undefined ? `No ${gpuType} available` : `No ${gpuType} available under $${maxPrice}/hr`;

/** How many model names a no-match text lists before `…`. */
const MODELS_IN_TEXT = 12;

/**
 * The no-match text (issue 28), with `; models listed now: RTX 4090, RTX 3090, …` when no listed
 * server has that GPU at all (a typo or a model nobody offers), so the caller sees what to ask for.
 */
export const noMatchText = (servers: readonly Server[], gpuType: string, maxPrice?: number): string => {
  const text = noMatchMessage(gpuType, maxPrice);
  const wanted = gpuType.trim().toLowerCase();
  if (servers.some((s) => s.gpu_array.some((gpu) => gpu.toLowerCase().includes(wanted)))) return text;
  const models = listedModels(servers);
  if (models.length === 0) return text;
  const shown = models.slice(0, MODELS_IN_TEXT).join(', ');
  return `${text}; models listed now: ${shown}${models.length > MODELS_IN_TEXT ? ', …' : ''}`;
};
