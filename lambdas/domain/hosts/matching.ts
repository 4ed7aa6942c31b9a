/**
 * Server matching for create-order and price-alert (DESIGN.md "Server matching"). Pure: the
 * listing comes in, the chosen server goes out; the order of the listing is the marketplace's.
 */
import { listedModels } from '../marketplace-summary';
import type { Server } from '../marketplace-types';
import { feesNote, NO_FEES, type MarketplaceFees } from '../teams/spend-budget';
import { spotBidFor } from '../leases/spot-bid';

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
  /** Host filters (issue 31 §1): reliability 0–1, rating 0–5 with at least this many ratings, ids left out. */
  readonly min_reliability?: number;
  readonly min_rating?: number;
  readonly min_rating_count?: number;
  readonly exclude_servers?: readonly number[];
  /** Hosts the relay avoids after failed starts (issue 31 §2). */
  readonly avoided?: ReadonlySet<number> | readonly number[];
}

/** The host filters of a request (issue 31 §1), as create-order and price-alert carry them. */
export interface HostFilters {
  readonly min_reliability?: number;
  readonly min_rating?: number;
  readonly min_rating_count?: number;
  readonly exclude_servers?: readonly number[];
}

/** `prefer` (issue 31 §3): which of the matches is taken. */
export const PREFER_MODES = ['first', 'cheapest', 'reliable'] as const;
export type Prefer = (typeof PREFER_MODES)[number];

const asSet = (ids: ReadonlySet<number> | readonly number[] | undefined): ReadonlySet<number> =>
  ids === undefined ? new Set() : Array.isArray(ids) ? new Set(ids) : (ids as ReadonlySet<number>);

/** The USD/h price the cap is compared with, or undefined when the server does not state it. */
export const comparablePriceUsd = (server: Server, useSpot: boolean, currency: string): number | undefined =>
  useSpot ? server.price.usd_per_hour.spot : server.price.usd_per_hour.on_demand[currency];

/** Whether a server passes the reliability filter. */
const reliableEnough = (server: Server, criteria: HostFilters): boolean =>
  criteria.min_reliability === undefined || server.reliability >= criteria.min_reliability;

/** Whether a server passes the rating filter: avg at least min_rating, from at least min_rating_count ratings. */
const ratedEnough = (server: Server, criteria: HostFilters): boolean =>
  (criteria.min_rating === undefined || server.rating.avg >= criteria.min_rating) &&
  (criteria.min_rating_count === undefined || server.rating.cnt >= criteria.min_rating_count);

/** Whether one server satisfies the criteria (ignoring exclusions). */
export const serverMatches = (server: Server, criteria: MatchCriteria): boolean =>
  serverFits(server, criteria) && reliableEnough(server, criteria) && ratedEnough(server, criteria);

/** GPU, coin, spot bid and price: the spec's rule, without the host filters. */
const serverFits = (server: Server, criteria: MatchCriteria): boolean => {
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

/** Every matching server, in marketplace order, without the excluded, claimed and avoided ones. */
export const findMatchingServers = (servers: readonly Server[], criteria: MatchCriteria): Server[] => {
  const excluded = new Set([...asSet(criteria.exclude), ...(criteria.exclude_servers ?? [])]);
  const claimed = asSet(criteria.claimed);
  const avoided = asSet(criteria.avoided);
  return servers.filter(
    (s) => !excluded.has(s.id) && !claimed.has(s.id) && !avoided.has(s.id) && serverMatches(s, criteria),
  );
};

/** How many servers that match GPU, coin and price each filter left out (issue 31 §1), in that order. */
export interface LeftOut {
  readonly reliability: number;
  readonly rating: number;
  readonly excluded: number;
  readonly avoided: number;
}

/**
 * Counts the servers the host filters left out among those the spec's rule matches (not rented,
 * GPU, coin, price): by reliability first, then by rating, then by `exclude_servers`, then avoided.
 */
export const leftOutBy = (servers: readonly Server[], criteria: MatchCriteria): LeftOut => {
  const excluded = new Set(criteria.exclude_servers ?? []);
  const avoided = asSet(criteria.avoided);
  const counts = { reliability: 0, rating: 0, excluded: 0, avoided: 0 };
  for (const server of servers) {
    if (!serverFits(server, criteria)) continue;
    if (!reliableEnough(server, criteria)) counts.reliability += 1;
    else if (!ratedEnough(server, criteria)) counts.rating += 1;
    else if (excluded.has(server.id)) counts.excluded += 1;
    else if (avoided.has(server.id)) counts.avoided += 1;
  }
  return counts;
};

const plural = (n: number, one: string, many: string): string => `${n} ${n === 1 ? one : many}`;

/**
 * The no-match text naming the filters that emptied the list (issue 31 §1):
 * `No RTX 4090 available under $0.5/hr with reliability >= 0.99 (3 servers left out by reliability, 1 by rating)`.
 * A filter that left nothing out is not named; without any the spec's text stays as it is. Avoided
 * hosts follow: `; avoided 2 hosts after failed starts`.
 */
export const filteredNoMatchMessage = (
  gpuType: string,
  maxPrice: number | undefined,
  filters: HostFilters,
  leftOut: LeftOut,
): string => {
  const named: string[] = [];
  const counts: [number, string][] = [];
  if (leftOut.reliability > 0) {
    named.push(`reliability >= ${filters.min_reliability}`);
    counts.push([leftOut.reliability, 'reliability']);
  }
  if (leftOut.rating > 0) {
    const rating = filters.min_rating !== undefined ? `rating >= ${filters.min_rating}` : 'rating';
    const count =
      filters.min_rating_count !== undefined && filters.min_rating_count > 1
        ? ` from at least ${filters.min_rating_count} ratings`
        : '';
    named.push(`${rating}${count}`);
    counts.push([leftOut.rating, 'rating']);
  }
  if (leftOut.excluded > 0) {
    named.push('exclude_servers');
    counts.push([leftOut.excluded, 'exclude_servers']);
  }
  let text = noMatchMessage(gpuType, maxPrice);
  if (named.length > 0) {
    const parts = counts.map(([n, by], i) =>
      i === 0 ? `${plural(n, 'server', 'servers')} left out by ${by}` : `${n} by ${by}`,
    );
    text += ` with ${named.join(' and ')} (${parts.join(', ')})`;
  }
  if (leftOut.avoided > 0) text += `; avoided ${plural(leftOut.avoided, 'host', 'hosts')} after failed starts`;
  return text;
};

/**
 * The matches in the order `prefer` takes them (issue 31 §3): `first` keeps the marketplace's order
 * (the spec's rule), `cheapest` sorts by the USD/h of the order type, `reliable` by reliability, then
 * rating, then price. Servers without a comparable price go last; ties keep the marketplace's order.
 */
export const orderByPreference = (
  servers: readonly Server[],
  prefer: Prefer | undefined,
  criteria: Pick<MatchCriteria, 'use_spot' | 'currency'>,
): Server[] => {
  const price = (s: Server): number => {
    const p = comparablePriceUsd(s, criteria.use_spot, criteria.currency);
    return typeof p === 'number' ? p : Number.POSITIVE_INFINITY;
  };
  const list = [...servers];
  if (prefer === 'cheapest') return list.sort((a, b) => price(a) - price(b));
  if (prefer === 'reliable')
    return list.sort((a, b) => b.reliability - a.reliability || b.rating.avg - a.rating.avg || price(a) - price(b));
  return list;
};

/**
 * Why a server was chosen (issue 31 §3): `cheapest of 7 matches at $0.31/h`; with the marketplace's
 * fees (issue 31 §6) the all-in price and the creation fee follow:
 * `cheapest of 7 matches at $0.31/h ($0.33/h with the 5 % renter fee, + $0.10 per order)`.
 */
export const chosenText = (
  prefer: Prefer | undefined,
  matches: number,
  priceUsd: number | undefined,
  fees: MarketplaceFees = NO_FEES,
): string => {
  const text = `${prefer ?? 'first'} of ${plural(matches, 'match', 'matches')}`;
  if (priceUsd === undefined) return text;
  const note = feesNote(priceUsd, fees);
  return `${text} at $${priceUsd}/h${note ? ` ${note}` : ''}`;
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
