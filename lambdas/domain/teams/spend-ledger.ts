/**
 * The spend ledger (issue 24 item 3): per key and per UTC day, what is reserved (worst cases of
 * orders still running), settled (actual cost of orders that ended), how many orders settled and
 * their GPU hours. `GET /webhook/spend?from=YYYY-MM-DD&to=YYYY-MM-DD` answers it; a key sees its own
 * lines, the default key and admin keys every key's. Pure: the day items come in, the report goes out.
 */
import { roundUsd } from './spend-budget';

/** How long ledger items and day totals are kept (DynamoDB TTL). */
export const LEDGER_RETENTION_DAYS = 400;
/** The longest range one request may ask for, in days (both ends included). */
export const MAX_SPEND_RANGE_DAYS = 400;

/** One key's totals on one day. */
export interface SpendLine {
  readonly reserved_usd: number;
  readonly settled_usd: number;
  readonly orders: number;
  readonly gpu_hours: number;
}

/** One day as stored: the relay's totals and each key's. */
export interface SpendDay {
  readonly day: string;
  readonly total: SpendLine;
  readonly keys: Readonly<Record<string, SpendLine>>;
}

/** Where the day totals are read (the route's port). */
export interface SpendDays {
  /** The stored days among `days` (a day without spending is absent). */
  days(days: readonly string[]): Promise<ReadonlyMap<string, SpendDay>>;
}

const EMPTY: SpendLine = { reserved_usd: 0, settled_usd: 0, orders: 0, gpu_hours: 0 };

const num = (value: unknown): number =>
  typeof value === 'number' && Number.isFinite(value) ? value : Number(value ?? 0) || 0;

/** A stored day item (`held`, `settled`, `orders`, `gpu_hours` and their `<field>@<key>` copies) as a SpendDay. */
export const readSpendDay = (day: string, item: Readonly<Record<string, unknown>>): SpendDay => {
  const keys: Record<string, { -readonly [K in keyof SpendLine]: number }> = {};
  const field = { held: 'reserved_usd', settled: 'settled_usd', orders: 'orders', gpu_hours: 'gpu_hours' } as const;
  for (const [name, value] of Object.entries(item)) {
    const at = name.indexOf('@');
    if (at <= 0 || name.startsWith('open@')) continue;
    const target = field[name.slice(0, at) as keyof typeof field] as keyof SpendLine | undefined;
    if (!target) continue;
    const key = name.slice(at + 1);
    keys[key] ??= { ...EMPTY };
    keys[key][target] = roundUsd(num(value));
  }
  return {
    day,
    total: {
      reserved_usd: roundUsd(num(item.held)),
      settled_usd: roundUsd(num(item.settled)),
      orders: num(item.orders),
      gpu_hours: roundUsd(num(item.gpu_hours)),
    },
    keys,
  };
};

const DATE = /^(\d{4})-(\d{2})-(\d{2})$/;

const dayMs = (date: string): number | undefined => {
  if (!DATE.test(date)) return undefined;
  const ms = Date.parse(`${date}T00:00:00Z`);
  return Number.isFinite(ms) && new Date(ms).toISOString().slice(0, 10) === date ? ms : undefined;
};

/**
 * The days from `from` to `to` (both included), or the 400 text. Defaults: `to` = today, `from` = `to`.
 */
export const spendRange = (
  from: string | undefined,
  to: string | undefined,
  today: string,
): { readonly days: string[] } | { readonly error: string } => {
  const toDay = to ?? today;
  const fromDay = from ?? toDay;
  const start = dayMs(fromDay);
  const end = dayMs(toDay);
  if (start === undefined) return { error: 'from must be a date YYYY-MM-DD' };
  if (end === undefined) return { error: 'to must be a date YYYY-MM-DD' };
  if (start > end) return { error: 'from must not be after to' };
  const count = (end - start) / 86_400_000 + 1;
  if (count > MAX_SPEND_RANGE_DAYS) return { error: `at most ${MAX_SPEND_RANGE_DAYS} days per request` };
  return { days: Array.from({ length: count }, (_, i) => new Date(start + i * 86_400_000).toISOString().slice(0, 10)) };
};

/** Days one page of GET /webhook/spend covers at most (one BatchGetItem), and without `limit`. */
export const MAX_SPEND_PAGE_DAYS = 100;
export const DEFAULT_SPEND_PAGE_DAYS = 31;

/**
 * The days of one page (issue 38 §5): from `startDay` (a cursor's; default the range's first) at
 * most `limit` days, and the first day of the next page while one follows. Undefined when
 * `startDay` is not in the range.
 */
export const spendPage = (
  days: readonly string[],
  limit: number,
  startDay?: string,
): { readonly days: string[]; readonly nextDay?: string } | undefined => {
  const start = startDay === undefined ? 0 : days.indexOf(startDay);
  if (start < 0) return undefined;
  const page = days.slice(start, start + limit);
  const nextDay = days[start + limit];
  return { days: page, ...(nextDay !== undefined ? { nextDay } : {}) };
};

/** One line of the answer: a key on a day. */
export interface SpendReportLine extends SpendLine {
  readonly day: string;
  readonly key: string;
}

export interface SpendReport {
  readonly from: string;
  readonly to: string;
  /** SPEND_LIMIT_USD_PER_DAY, when set (a key sees its own budget instead). */
  readonly limit_usd_per_day?: number;
  /** Lines with anything on them, by day then key. */
  readonly days: readonly SpendReportLine[];
  /** Per key over the range. */
  readonly keys: readonly (SpendLine & { readonly key: string })[];
  readonly total: SpendLine;
}

const add = (a: SpendLine, b: SpendLine): SpendLine => ({
  reserved_usd: roundUsd(a.reserved_usd + b.reserved_usd),
  settled_usd: roundUsd(a.settled_usd + b.settled_usd),
  orders: a.orders + b.orders,
  gpu_hours: roundUsd(a.gpu_hours + b.gpu_hours),
});

const isEmpty = (line: SpendLine): boolean =>
  line.reserved_usd === 0 && line.settled_usd === 0 && line.orders === 0 && line.gpu_hours === 0;

/** The report over `days`; `onlyKey` keeps one key's lines (a key that does not see every order). */
export const spendReport = (
  days: readonly string[],
  stored: ReadonlyMap<string, SpendDay>,
  options: { readonly onlyKey?: string; readonly limitUsdPerDay?: number } = {},
): SpendReport => {
  const lines: SpendReportLine[] = [];
  const perKey = new Map<string, SpendLine>();
  let total = EMPTY;
  for (const day of days) {
    const item = stored.get(day);
    if (!item) continue;
    for (const key of Object.keys(item.keys).sort()) {
      if (options.onlyKey !== undefined && key !== options.onlyKey) continue;
      const line = item.keys[key] as SpendLine;
      if (isEmpty(line)) continue;
      lines.push({ day, key, ...line });
      perKey.set(key, add(perKey.get(key) ?? EMPTY, line));
      total = add(total, line);
    }
  }
  return {
    from: days[0] as string,
    to: days[days.length - 1] as string,
    ...(options.limitUsdPerDay !== undefined ? { limit_usd_per_day: options.limitUsdPerDay } : {}),
    days: lines,
    keys: [...perKey].sort(([a], [b]) => a.localeCompare(b)).map(([key, line]) => ({ key, ...line })),
    total,
  };
};
