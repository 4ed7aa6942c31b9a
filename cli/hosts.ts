/** `hosts`: the relay's own record of each host (GET /webhook/hosts, issue 31 §2) as a table; --json prints the answer. */
import type { Values } from './args';
import { usageError } from './commands';
import { connectionOf, requireSecret } from './connection';
import { EXIT_OK, out, printAnswer } from './output';
import { send } from './signed-request';
import { table, utcTime } from './tables';

interface HostLine {
  readonly server_id?: unknown;
  readonly score?: unknown;
  readonly placed?: unknown;
  readonly ready?: unknown;
  readonly readiness_timeouts?: unknown;
  readonly ssh_never_answered?: unknown;
  readonly login_refused?: unknown;
  readonly refusals?: unknown;
  readonly outbids?: unknown;
  readonly ready_seconds_median?: unknown;
  readonly failures_24h?: unknown;
  readonly avoided_until?: unknown;
  readonly avoided_reason?: unknown;
}

const num = (value: unknown): string => (typeof value === 'number' ? String(value) : '-');
const refusals = (value: unknown): string =>
  value && typeof value === 'object'
    ? String(
        Object.values(value as Record<string, unknown>).reduce<number>(
          (n, v) => n + (typeof v === 'number' ? v : 0),
          0,
        ),
      )
    : '0';

/** The hosts table: one line per host, avoided hosts first (the relay's order). */
export const hostsTable = (hosts: readonly HostLine[], now: Date = new Date()): string =>
  table(
    [
      'SERVER',
      'SCORE',
      'PLACED',
      'READY',
      'TIMEOUTS',
      'NO_SSH',
      'LOGIN_REFUSED',
      'REFUSED',
      'OUTBIDS',
      'READY_S',
      'FAILS_24H',
      'AVOIDED',
    ],
    hosts.map((h) => [
      num(h.server_id),
      typeof h.score === 'number' ? h.score.toFixed(3) : '-',
      num(h.placed),
      num(h.ready),
      num(h.readiness_timeouts),
      num(h.ssh_never_answered),
      num(h.login_refused),
      refusals(h.refusals),
      num(h.outbids),
      typeof h.ready_seconds_median === 'number' ? String(Math.round(h.ready_seconds_median)) : '-',
      num(h.failures_24h),
      typeof h.avoided_until === 'number'
        ? `until ${utcTime(h.avoided_until, now)}${typeof h.avoided_reason === 'string' ? `: ${h.avoided_reason}` : ''}`
        : '',
    ]),
  );

export const runHosts = async (values: Values, positionals: readonly string[]): Promise<number> => {
  if (positionals.length) throw usageError('hosts', `unexpected argument '${positionals[0]}'`);
  const conn = connectionOf('hosts', values);
  requireSecret('hosts', conn.secret);
  // Paged (issue 38 §5): every page, following `next`.
  const hosts: HostLine[] = [];
  let next: string | undefined;
  do {
    const path = `/webhook/hosts${next !== undefined ? `?next=${encodeURIComponent(next)}` : ''}`;
    const res = await send(conn, { method: 'GET', path, signed: true });
    printAnswer('hosts', res, { quietBody: true });
    const page = res.json as { hosts?: HostLine[]; next?: unknown } | undefined;
    hosts.push(...(page?.hosts ?? []).filter((h) => h && typeof h === 'object'));
    next = typeof page?.next === 'string' ? page.next : undefined;
  } while (next !== undefined);
  if (hosts.length === 0) out('no host records yet');
  else out(hostsTable(hosts));
  return EXIT_OK;
};
