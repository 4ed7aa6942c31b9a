/**
 * The tolerant reader: turns the listing and order elements of either marketplace dialect (the
 * spec's, marketplace-api.md; production's, marketplace-live.md) into the domain's one shape. It
 * recognises the dialect per element from its fields; there is no configuration switch.
 *
 * An element the reader cannot use (no id, no GPU names, neither order shape) is skipped and
 * reported with its index; the rest of the answer is used.
 */
import type * as z from 'zod/mini';
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
 * USD prices of a listing element. Production prices on-demand per payment coin
 * (`on_demand_clore`, `_usd`, `_btc`); the spec names one key, `on_demand_native`, "the on-demand
 * price expressed in USD", so when it is the only one it prices the server in every coin.
 */
const readUsdPrices = (
  usd: Readonly<Record<string, unknown>> | undefined,
  coins: readonly string[],
): Server['price']['usd'] => {
  const onDemand: Record<string, number> = {};
  const slugs: string[] = [];
  for (const [key, value] of Object.entries(usd ?? {})) {
    const slug = ON_DEMAND_KEY.exec(key)?.[1];
    if (slug === undefined || !isPositive(value)) continue;
    slugs.push(slug);
    onDemand[COIN_BY_USD_SLUG[slug] ?? slug] = value;
  }
  if (slugs.length === 1 && slugs[0] === 'native') {
    const price = onDemand[COIN_BY_USD_SLUG.native!]!;
    for (const coin of coins) onDemand[coin] = price;
  }
  const spot = usd?.spot;
  return isPositive(spot) ? { on_demand: onDemand, spot } : { on_demand: onDemand };
};

/** One listing element, either dialect, or the reason it cannot be used. */
export const readServer = (raw: unknown): Server | string => {
  const parsed = ServerElementSchema.safeParse(raw, ENGLISH_TEXTS);
  if (!parsed.success) return describeIssues(parsed.error);
  const s = parsed.data;
  const coins = [...new Set([...s.allowed_coins, ...Object.keys(s.price.on_demand)])];
  return {
    ...s,
    price: { on_demand: s.price.on_demand, spot: s.price.spot, usd: readUsdPrices(s.price.usd, coins) },
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
const readLiveOrder = (o: z.infer<typeof LiveOrderElementSchema>): Order => {
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
    const parsed = SpecOrderElementSchema.safeParse(raw, ENGLISH_TEXTS);
    return parsed.success ? parsed.data : describeIssues(parsed.error);
  }
  if (fields && 'id' in fields) {
    const parsed = LiveOrderElementSchema.safeParse(raw, ENGLISH_TEXTS);
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
export const readServers = (elements: readonly unknown[]): ReadResult<Server> => readAll(elements, readServer);

/** Every usable order of a my_orders answer, in answer order, and the skipped elements. */
export const readOrders = (elements: readonly unknown[]): ReadResult<Order> => readAll(elements, readOrder);
