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
  const res = await send(conn, {
    method: 'GET',
    path: `/webhook/spend${query.size ? `?${query.toString()}` : ''}`,
    signed: true,
  });
  printAnswer('spend', res, { quietBody: true });
  const report = res.json as {
    from: string;
    to: string;
    limit_usd_per_day?: number;
    days: Line[];
    keys: Line[];
    total: Line;
  };
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
