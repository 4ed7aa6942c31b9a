/**
 * Tables the CLI prints for people (status, marketplace) and the words of a waiting task; --json
 * prints the relay's JSON instead where a script wants it.
 */

/** Left-aligned columns separated by two spaces; the header row first. */
export const table = (header: readonly string[], rows: readonly (readonly string[])[]): string => {
  const widths = header.map((h, i) => Math.max(h.length, ...rows.map((r) => (r[i] ?? '').length)));
  const line = (cells: readonly string[]) =>
    cells
      .map((c, i) => (i === cells.length - 1 ? c : c.padEnd(widths[i])))
      .join('  ')
      .trimEnd();
  return [line(header), ...rows.map(line)].join('\n');
};

/** `2026-11-27 14:05 UTC` of Unix seconds; only `14:05 UTC` when it is today (UTC). */
export const utcTime = (unixSeconds: number, now: Date = new Date()): string => {
  const iso = new Date(unixSeconds * 1000).toISOString();
  const day = iso.slice(0, 10);
  return `${day === now.toISOString().slice(0, 10) ? '' : `${day} `}${iso.slice(11, 16)} UTC`;
};

interface StatusOrder {
  readonly order_id?: unknown;
  readonly status?: unknown;
  readonly ssh?: unknown;
  readonly lease_expires_at?: unknown;
}

/** True for a status task's result ({total_orders, active, creating, orders}). */
export const isStatusResult = (
  result: unknown,
): result is { total_orders: number; active: number; creating: number; orders: StatusOrder[] } =>
  typeof result === 'object' &&
  result !== null &&
  Array.isArray((result as { orders?: unknown }).orders) &&
  typeof (result as { total_orders?: unknown }).total_orders === 'number';

/** The status result as a table: one order per line, then the counts. */
export const statusTable = (
  result: { total_orders: number; active: number; creating: number; orders: StatusOrder[] },
  now: Date = new Date(),
): string => {
  const counts = `${result.total_orders} order${result.total_orders === 1 ? '' : 's'}: ${result.active} running, ${result.creating} being created`;
  if (result.orders.length === 0) return `no orders\n${counts}`;
  const rows = result.orders.map((o) => [
    String(o.order_id ?? ''),
    String(o.status ?? ''),
    typeof o.lease_expires_at === 'number' ? utcTime(o.lease_expires_at, now) : '-',
    typeof o.ssh === 'string' && o.ssh ? o.ssh : '-',
  ]);
  return `${table(['ORDER', 'STATUS', 'LEASE ENDS', 'SSH'], rows)}\n${counts}`;
};

/** A task view as the relay shows it (GET /webhook/tasks/{task_id}); only what the words need. */
export interface TaskViewLike {
  readonly state?: string;
  readonly waiting_until?: number;
  readonly position?: number;
}

/** What a --wait is waiting for, in words: `waiting for a server (position 2, until 14:05 UTC)`. */
export const waitingWords = (taskId: string, view: TaskViewLike | undefined, now: Date = new Date()): string => {
  if (view?.state === 'waiting') {
    const parts = [
      ...(typeof view.position === 'number' ? [`position ${view.position}`] : []),
      ...(typeof view.waiting_until === 'number' ? [`until ${utcTime(view.waiting_until, now)}`] : []),
    ];
    return `waiting for a server${parts.length ? ` (${parts.join(', ')})` : ''}`;
  }
  return `waiting for task ${taskId}${view?.state ? `: ${view.state}` : ''}`;
};

interface ModelRow {
  readonly available?: unknown;
  readonly total?: unknown;
  readonly min_price_usd_per_hour?: { readonly spot?: unknown; readonly on_demand?: unknown };
}

const usd = (value: unknown): string => (typeof value === 'number' ? `$${value.toFixed(value < 1 ? 3 : 2)}` : '-');
const priceKey = (m: ModelRow): number => {
  const { spot, on_demand: onDemand } = m.min_price_usd_per_hour ?? {};
  return typeof spot === 'number' ? spot : typeof onDemand === 'number' ? onDemand : Number.POSITIVE_INFINITY;
};

/** GET /webhook/marketplace's `models` as a table, cheapest first; the totals below. */
export const marketplaceTable = (answer: {
  readonly models?: Readonly<Record<string, ModelRow>>;
  readonly total_servers?: unknown;
  readonly total_available?: unknown;
}): string => {
  const rows = Object.entries(answer.models ?? {})
    .sort(([an, a], [bn, b]) => priceKey(a) - priceKey(b) || an.localeCompare(bn))
    .map(([name, m]) => [
      name,
      String(m.available ?? '-'),
      String(m.total ?? '-'),
      usd(m.min_price_usd_per_hour?.spot),
      usd(m.min_price_usd_per_hour?.on_demand),
    ]);
  const totals = `${String(answer.total_available ?? '?')} of ${String(answer.total_servers ?? '?')} servers available; rent one with --gpu "<GPU TYPE>"`;
  return `${table(['GPU TYPE', 'AVAILABLE', 'TOTAL', 'SPOT FROM', 'ON-DEMAND FROM'], rows)}\n${totals}`;
};
