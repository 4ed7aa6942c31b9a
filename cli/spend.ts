/** `spend [--from YYYY-MM-DD] [--to YYYY-MM-DD]`: the spend ledger (GET /webhook/spend, issue 24) as a table. */
import type { Values } from './args';
import { usageError } from './commands';
import { connectionOf, requireSecret } from './connection';
import { EXIT_OK, out, printAnswer } from './output';
import { send } from './signed-request';

interface Line {
  readonly day?: string;
  readonly key?: string;
  readonly reserved_usd: number;
  readonly settled_usd: number;
  readonly orders: number;
  readonly gpu_hours: number;
}

interface Report {
  readonly from: string;
  readonly to: string;
  readonly limit_usd_per_day?: number;
  readonly days: Line[];
  readonly keys: Line[];
  readonly total: Line;
  readonly next?: string;
}

const sum = (a: Line, b: Line): Line => ({
  reserved_usd: Math.round((a.reserved_usd + b.reserved_usd) * 1e6) / 1e6,
  settled_usd: Math.round((a.settled_usd + b.settled_usd) * 1e6) / 1e6,
  orders: a.orders + b.orders,
  gpu_hours: Math.round((a.gpu_hours + b.gpu_hours) * 1e6) / 1e6,
});

/** One report from the pages of a range: their days in order, per-key and overall totals summed. */
const mergePages = (pages: readonly Report[]): Report => {
  const first = pages[0] as Report;
  if (pages.length === 1) return first;
  const keys = new Map<string, Line>();
  for (const page of pages)
    for (const line of page.keys) {
      const key = line.key ?? '';
      const before = keys.get(key);
      keys.set(key, { key, ...(before ? sum(before, line) : line) });
    }
  return {
    ...first,
    to: (pages[pages.length - 1] as Report).to,
    days: pages.flatMap((p) => p.days),
    keys: [...keys.values()].sort((a, b) => (a.key ?? '').localeCompare(b.key ?? '')),
    total: pages.slice(1).reduce((t, p) => sum(t, p.total), first.total),
  };
};

const DATE = /^\d{4}-\d{2}-\d{2}$/;
const usd = (n: number): string => `$${n.toFixed(2)}`;
const row = (day: string, key: string, l: Line): string[] => [
  day,
  key,
  usd(l.reserved_usd),
  usd(l.settled_usd),
  String(l.orders),
  l.gpu_hours.toFixed(2),
];

export const runSpend = async (values: Values, positionals: readonly string[]): Promise<number> => {
  if (positionals.length) throw usageError('spend', `unexpected argument '${positionals[0]}'`);
  for (const flag of ['from', 'to'] as const) {
    if (values[flag] !== undefined && !DATE.test(values[flag]))
      throw usageError('spend', `--${flag} must be a date YYYY-MM-DD, got '${values[flag]}'`);
  }
  const conn = connectionOf('spend', values);
  requireSecret('spend', conn.secret);
  const query = new URLSearchParams();
  if (values.from) query.set('from', values.from);
  if (values.to) query.set('to', values.to);
  // Paged (issue 38 §5): every page of the range, following `next`; the totals summed here.
  const pages: Report[] = [];
  let next: string | undefined;
  do {
    const pageQuery = new URLSearchParams(query);
    if (next !== undefined) pageQuery.set('next', next);
    const res = await send(conn, {
      method: 'GET',
      path: `/webhook/spend${pageQuery.size ? `?${pageQuery.toString()}` : ''}`,
      signed: true,
    });
    printAnswer('spend', res, { quietBody: true });
    const page = res.json as Report;
    pages.push(page);
    next = typeof page.next === 'string' ? page.next : undefined;
  } while (next !== undefined);
  const report = mergePages(pages);
  const rows = [['DAY', 'KEY', 'RESERVED', 'SETTLED', 'ORDERS', 'GPU_HOURS']]
    .concat(report.days.map((l) => row(l.day ?? '', l.key ?? '', l)))
    .concat(report.keys.map((l) => row('total', l.key ?? '', l)))
    .concat([row('total', '*', report.total)]);
  const widths = rows[0].map((_, i) => Math.max(...rows.map((r) => r[i].length)));
  out(
    `spend ${report.from} .. ${report.to} (UTC)${report.limit_usd_per_day !== undefined ? `, limit ${usd(report.limit_usd_per_day)} per day` : ''}`,
  );
  for (const r of rows)
    out(
      r
        .map((cell, i) => (i >= 2 ? cell.padStart(widths[i]) : cell.padEnd(widths[i])))
        .join('  ')
        .trimEnd(),
    );
  return EXIT_OK;
};
