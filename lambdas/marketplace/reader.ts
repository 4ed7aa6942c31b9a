/**
 * The tolerant reader: turns the listing and order elements of either marketplace dialect (the
 * spec's, marketplace-api.md; production's, marketplace-live.md) into the domain's one shape. It
 * recognises the dialect per element from its fields.
 *
 * It is also the one place where prices change unit: `price.usd.*` becomes USD per hour
 * (`price.usd_per_hour`), whatever period the marketplace states it in. The crypto maps (and so the
 * spot bid) stay in the marketplace's own unit.
 *
 * An element the reader cannot use (no id, no GPU names, neither order shape) is skipped and
 * reported with its index; the rest of the answer is used.
 */
import type * as z from 'zod/mini';
import type { PricePeriod } from '../../contract/settings';
import { ENGLISH_TEXTS } from '../domain/zod-texts';
import type { Order, Server } from '../domain/marketplace-types';
import { LiveOrderElementSchema, ServerElementSchema, SpecOrderElementSchema } from './schemas';

/** An element left out of an answer, and why. */
export interface SkippedElement {
  readonly index: number;
  readonly reason: string;
}

export interface ReadResult<T> {
  readonly items: T[];
  readonly skipped: SkippedElement[];
}

export interface ReaderOptions {
  /**
   * MARKETPLACE_PRICE_PERIOD: the period of every `price.usd.*` figure. Unset, each listing
   * element's dialect decides ({@link usdPricePeriod}).
   */
  readonly pricePeriod?: PricePeriod;
}

/** Hours in each marketplace price period. */
export const HOURS_PER_PERIOD: Readonly<Record<PricePeriod, number>> = { hour: 1, day: 24 };

/** Significant digits a per-day price keeps once divided into hours (10/24 → 0.416667). */
const PER_HOUR_DIGITS = 6;

/** A price of `period` in USD as USD per hour. */
export const toUsdPerHour = (value: number, period: PricePeriod): number =>
  period === 'hour' ? value : Number((value / HOURS_PER_PERIOD[period]).toPrecision(PER_HOUR_DIGITS));

/**
 * The coin a `price.usd.on_demand_<slug>` key prices (marketplace-live.md, "Our contract"). An
 * unknown slug keeps its own name, so a new coin is still readable by whoever asks for that name.
 */
export const COIN_BY_USD_SLUG: Readonly<Record<string, string>> = {
  clore: 'CLORE-Blockchain',
  btc: 'bitcoin',
  usd: 'USD-Blockchain',
  native: 'NATIVE-Blockchain',
};

const ON_DEMAND_KEY = /^on_demand_(.+)$/;

const isPositive = (v: unknown): v is number => typeof v === 'number' && Number.isFinite(v) && v > 0;

const describeIssues = (error: z.core.$ZodError): string =>
  error.issues
    .slice(0, 2)
    .map((i) => (i.path.length ? `${i.path.join('.')}: ${i.message}` : i.message))
    .join('; ');

/**
 * The period of a listing element's `price.usd.*`, from the dialect its keys show: the spec's one
 * `on_demand_native` key is USD per hour (marketplace-api.md); production's per-coin keys
 * (`on_demand_clore`, `_usd`, `_btc`, …) are USD per day (marketplace-live.md, S6–S8). Without any
 * `on_demand_*` key the period cannot be told (undefined).
 */
export const usdPricePeriod = (usd: Readonly<Record<string, unknown>> | undefined): PricePeriod | undefined => {
  const slugs = Object.keys(usd ?? {}).flatMap((key) => ON_DEMAND_KEY.exec(key)?.[1] ?? []);
  if (slugs.some((slug) => slug !== 'native')) return 'day';
  return slugs.length > 0 ? 'hour' : undefined;
};

/**
 * USD prices of a listing element, per hour. Production prices on-demand per payment coin
 * (`on_demand_clore`, `_usd`, `_btc`); the spec names one key, `on_demand_native`, "the on-demand
 * price expressed in USD", so when it is the only one it prices the server in every coin. When the
 * period is neither configured nor recognisable, no USD price is stated: a 24× misreading could rent
 * a server far over a caller's cap, so such a server is simply not shown to be under one.
 */
const readUsdPrices = (
  usd: Readonly<Record<string, unknown>> | undefined,
  coins: readonly string[],
  configured: PricePeriod | undefined,
): Server['price']['usd_per_hour'] => {
  const period = configured ?? usdPricePeriod(usd);
  if (period === undefined) return { on_demand: {} };
  const onDemand: Record<string, number> = {};
  const slugs: string[] = [];
  for (const [key, value] of Object.entries(usd ?? {})) {
    const slug = ON_DEMAND_KEY.exec(key)?.[1];
    if (slug === undefined || !isPositive(value)) continue;
    slugs.push(slug);
    onDemand[COIN_BY_USD_SLUG[slug] ?? slug] = toUsdPerHour(value, period);
  }
  if (slugs.length === 1 && slugs[0] === 'native') {
    const price = onDemand[COIN_BY_USD_SLUG.native!]!;
    for (const coin of coins) onDemand[coin] = price;
  }
  const spot = usd?.spot;
  return isPositive(spot) ? { on_demand: onDemand, spot: toUsdPerHour(spot, period) } : { on_demand: onDemand };
};

/** Most cards one `specs.gpu` entry may name; a bigger count is not a GPU count. */
const MAX_GPUS_PER_ENTRY = 64;

/**
 * GPU names from `specs.gpu`, for listing elements without `gpu_array` (older answers, S9):
 * `"2x NVIDIA GeForce RTX 3080"` → two "NVIDIA GeForce RTX 3080"; a name without a count is one
 * card; entries may be joined by `,`, `;` or `+`.
 */
export const gpusFromSpecs = (text: string): string[] =>
  text.split(/\s*[,;+]\s*/).flatMap((entry) => {
    const trimmed = entry.trim();
    if (trimmed.length === 0) return [];
    const counted = /^(\d+)\s*[x×]\s*(\S.*)$/i.exec(trimmed);
    if (!counted) return [trimmed];
    const count = Number(counted[1]);
    return count >= 1 && count <= MAX_GPUS_PER_ENTRY ? Array.from({ length: count }, () => counted[2]!.trim()) : [];
  });

/** One listing element, either dialect, or the reason it cannot be used. */
export const readServer = (raw: unknown, options: ReaderOptions = {}): Server | string => {
  const parsed = ServerElementSchema().safeParse(raw, ENGLISH_TEXTS);
  if (!parsed.success) return describeIssues(parsed.error);
  const { price, ...s } = parsed.data;
  const gpus = s.gpu_array.length > 0 ? s.gpu_array : gpusFromSpecs(s.specs.gpu);
  if (gpus.length === 0) return 'no GPU names (neither gpu_array nor specs.gpu)';
  const coins = [...new Set([...s.allowed_coins, ...Object.keys(price.on_demand)])];
  return {
    ...s,
    gpu_array: gpus,
    price: {
      on_demand: price.on_demand,
      spot: price.spot,
      usd_per_hour: readUsdPrices(price.usd, coins, options.pricePeriod),
    },
  };
};

/** The mapped port of `<container port>:<public port>` entries, e.g. `22:1277` → 1277 for 22. */
const mappedPorts = (entries: readonly string[]): Map<string, string> => {
  const ports = new Map<string, string>();
  for (const entry of entries) {
    const match = /^\s*(\d{1,5})\s*:\s*(\d{1,5})\s*$/.exec(entry);
    if (match && !ports.has(match[1]!)) ports.set(match[1]!, match[2]!);
  }
  return ports;
};

/**
 * A production order. Ready when not expired, not offline, with a host and an ssh mapping; its
 * status is then `running`, `expired` when expired, else `creating_order` (marketplace-live.md).
 */
const readLiveOrder = (o: z.infer<ReturnType<typeof LiveOrderElementSchema>>): Order => {
  const host = o.pub_cluster.find((h) => h.trim().length > 0)?.trim();
  const tcp = mappedPorts(o.tcp_ports);
  const sshPort = tcp.get('22');
  const ready = o.expired !== true && o.online !== false && host !== undefined && sshPort !== undefined;
  const ports: Record<string, string> = {};
  if (host) for (const [container, mapped] of tcp) ports[container] = `tcp://${host}:${mapped}`;
  if (o.http_port && o.http_pub) ports[o.http_port] = `https://${o.http_pub}`;
  return {
    order_id: o.id,
    renting_server: o.si,
    type: o.spot === true ? 'spot' : 'on-demand',
    status: o.expired === true ? 'expired' : ready ? 'running' : 'creating_order',
    currency: o.currency,
    price: o.price,
    created: Math.floor(o.ct),
    started: ready ? Math.floor(o.ct) : 0,
    // Production bills per day (marketplace-live.md, S6: spend 2/1440 of a price of 2 after a minute).
    ...(typeof o.spend === 'number' && o.spend >= 0 && o.price > 0 ? { billed_hours: (o.spend / o.price) * 24 } : {}),
    // What the order cost (its coin, fee included) and its creation fee (USD): the ledger's cost (issue 29 §3).
    ...(typeof o.spend === 'number' && Number.isFinite(o.spend) && o.spend >= 0 ? { spend: o.spend } : {}),
    ...(typeof o.creation_fee === 'number' && Number.isFinite(o.creation_fee) && o.creation_fee >= 0
      ? { creation_fee: o.creation_fee }
      : {}),
    connection: {
      ...(host && sshPort ? { ssh: `ssh root@${host} -p ${sshPort}` } : {}),
      ...(Object.keys(ports).length ? { ports } : {}),
    },
  };
};

/** One order element, either dialect (recognised by `order_id` or `id`), or the reason it cannot be used. */
export const readOrder = (raw: unknown): Order | string => {
  const fields = raw !== null && typeof raw === 'object' ? (raw as Record<string, unknown>) : undefined;
  if (fields && 'order_id' in fields) {
    const parsed = SpecOrderElementSchema().safeParse(raw, ENGLISH_TEXTS);
    return parsed.success ? parsed.data : describeIssues(parsed.error);
  }
  if (fields && 'id' in fields) {
    const parsed = LiveOrderElementSchema().safeParse(raw, ENGLISH_TEXTS);
    return parsed.success ? readLiveOrder(parsed.data) : describeIssues(parsed.error);
  }
  return 'neither order_id nor id';
};

const readAll = <T>(elements: readonly unknown[], read: (raw: unknown) => T | string): ReadResult<T> => {
  const items: T[] = [];
  const skipped: SkippedElement[] = [];
  elements.forEach((raw, index) => {
    const item = read(raw);
    if (typeof item === 'string') skipped.push({ index, reason: item });
    else items.push(item);
  });
  return { items, skipped };
};

/** Every usable server of a listing, in marketplace order, and the skipped elements. */
export const readServers = (elements: readonly unknown[], options: ReaderOptions = {}): ReadResult<Server> =>
  readAll(elements, (raw) => readServer(raw, options));

/** Every usable order of a my_orders answer, in answer order, and the skipped elements. */
export const readOrders = (elements: readonly unknown[]): ReadResult<Order> => readAll(elements, readOrder);
