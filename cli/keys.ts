/**
 * `keys create|list|ssh-key|revoke` against the admin routes (issue 24; the SSH public key of a caller
 * key: issue 37 §2). The new key's secret is printed once.
 */
import type { Values } from './args';
import { parsePositiveNumber } from './args';
import { KEYS_CREATE_OPTIONS, usageError } from './commands';
import type { Connection } from './connection';
import { connectionOf, requireSecret } from './connection';
import { EXIT_OK, out, printAnswer } from './output';
import { send } from './signed-request';
import { readPublicKeyFile } from './ssh-key-file';

interface KeyView {
  readonly name: string;
  readonly status: string;
  readonly scopes: string[];
  readonly orders_per_hour?: number;
  readonly budget_usd_per_day?: number;
  readonly expires_at?: string;
  readonly created_at: string;
  readonly slack_user?: string;
  /** The SHA-256 fingerprint of the key's SSH public key, when it has one (issue 37 §2). */
  readonly ssh_key_fingerprint?: string;
}

const createKey = async (conn: Connection, values: Values, args: readonly string[]): Promise<number> => {
  if (args.length) throw usageError('keys', `unexpected argument '${args[0]}'`);
  if (!values.name) throw usageError('keys', '--name is required');
  if (!values.scopes) throw usageError('keys', '--scopes is required (comma-separated: order, cancel, read, admin)');
  const body: Record<string, unknown> = {
    name: values.name,
    scopes: values.scopes
      .split(',')
      .map((s) => s.trim())
      .filter(Boolean),
  };
  if (values['orders-per-hour'] !== undefined) {
    const n = Number(values['orders-per-hour']);
    if (!Number.isInteger(n) || n <= 0)
      throw usageError('keys', `--orders-per-hour must be a positive integer, got '${values['orders-per-hour']}'`);
    body.orders_per_hour = n;
  }
  if (values['budget-usd-per-day'] !== undefined)
    body.budget_usd_per_day = parsePositiveNumber('keys', 'budget-usd-per-day', values['budget-usd-per-day']);
  if (values.expires !== undefined) body.expires = values.expires;
  if (values['slack-user'] !== undefined) body.slack_user = values['slack-user'];
  if (values['ssh-key'] !== undefined) body.ssh_public_key = readPublicKeyFile('keys', '--ssh-key', values['ssh-key']);
  const res = await send(conn, { method: 'POST', path: '/admin/keys', body: JSON.stringify(body), signed: true });
  printAnswer('keys create', res, { quietBody: true });
  out(`key ${res.json.name} created (scopes ${res.json.scopes.join(',')})`);
  out(`secret: ${res.json.secret}`);
  out(
    'Store it now: it is shown only once. Sign with it and send X-Webhook-Key-Id (gpu-relay --key NAME --secret ...).',
  );
  return EXIT_OK;
};

const listKeys = async (conn: Connection, args: readonly string[]): Promise<number> => {
  if (args.length) throw usageError('keys', `unexpected argument '${args[0]}'`);
  const res = await send(conn, { method: 'GET', path: '/admin/keys', signed: true });
  printAnswer('keys list', res, { quietBody: true });
  const keys = res.json.keys as KeyView[];
  const rows = [
    ['NAME', 'STATUS', 'SCOPES', 'ORDERS/H', 'USD/DAY', 'EXPIRES', 'CREATED', 'SLACK USER', 'SSH KEY'],
  ].concat(
    keys.map((k) => [
      k.name,
      k.status,
      k.scopes.join(','),
      String(k.orders_per_hour ?? '-'),
      String(k.budget_usd_per_day ?? '-'),
      k.expires_at ? new Date(Date.parse(k.expires_at) - 1000).toISOString().slice(0, 10) : '-',
      k.created_at.slice(0, 10),
      k.slack_user ?? '-',
      k.ssh_key_fingerprint ?? '-',
    ]),
  );
  const widths = rows[0].map((_, i) => Math.max(...rows.map((r) => r[i].length)));
  for (const row of rows)
    out(
      row
        .map((cell, i) => cell.padEnd(widths[i]))
        .join('  ')
        .trimEnd(),
    );
  return EXIT_OK;
};

/** `keys ssh-key NAME FILE.pub`: the key's SSH public key, which its orders carry when they name none. */
const setSshKey = async (conn: Connection, args: readonly string[]): Promise<number> => {
  if (args.length !== 2) throw usageError('keys', 'keys ssh-key takes a key NAME and a FILE.pub');
  const [name, file] = args;
  const body = JSON.stringify({ ssh_public_key: readPublicKeyFile('keys', 'FILE.pub', file) });
  const res = await send(conn, {
    method: 'PUT',
    path: `/admin/keys/${encodeURIComponent(name)}/ssh-key`,
    body,
    signed: true,
  });
  printAnswer('keys ssh-key', res, { quietBody: true });
  const fingerprint = typeof res.json?.ssh_key_fingerprint === 'string' ? ` (${res.json.ssh_key_fingerprint})` : '';
  out(`key ${name}: SSH public key set${fingerprint}; its orders without ssh_public_key carry it`);
  return EXIT_OK;
};

const revokeKey = async (conn: Connection, args: readonly string[]): Promise<number> => {
  if (args.length !== 1) throw usageError('keys', 'expected exactly one key NAME');
  const res = await send(conn, {
    method: 'POST',
    path: `/admin/keys/${encodeURIComponent(args[0])}/revoke`,
    body: '',
    signed: true,
  });
  printAnswer('keys revoke', res, { quietBody: true });
  out(
    `key ${args[0]} revoked${res.json.already ? ' (it already was)' : ''}; every relay instance refuses it within CALLER_KEY_CACHE_SECONDS (≤ 60 s)`,
  );
  return EXIT_OK;
};

export const runKeys = async (values: Values, positionals: readonly string[]): Promise<number> => {
  const [sub, ...args] = positionals;
  const conn = connectionOf('keys', values);
  requireSecret('keys', conn.secret);
  if (sub !== 'create')
    for (const flag of KEYS_CREATE_OPTIONS)
      if (values[flag] !== undefined) throw usageError('keys', `--${flag} only makes sense with keys create`);
  switch (sub) {
    case 'create':
      return createKey(conn, values, args);
    case 'list':
      return listKeys(conn, args);
    case 'ssh-key':
      return setSshKey(conn, args);
    case 'revoke':
      return revokeKey(conn, args);
    default:
      throw usageError('keys', sub ? `unknown keys command '${sub}'` : 'expected create, list, ssh-key or revoke');
  }
};
