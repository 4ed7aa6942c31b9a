/**
 * The caller-key admin routes (issue 24), scope `admin`: create (the secret is in this answer only),
 * list (never a secret), revoke, delete (a revoked key). Each route file exports one of these handlers.
 */
import { randomBytes } from 'node:crypto';
import { logger } from '../../adapters/observability';
import {
  KEY_NAME_PATTERN,
  KeyLimitReachedError,
  keyView,
  newKeyRecord,
  type CallerKeyStore,
  type KeySealer,
} from '../../domain/teams/caller-keys';
import { CreateKeyBodySchema } from '../../http/admin-bodies/keys';
import { SshKeyBodySchema } from '../../http/admin-bodies/ssh-key';
import { parseSshPublicKey, type KeySshKeys } from '../../domain/access/order-access';
import { parseBody } from '../../http/request-fields';
import { httpError, jsonResponse, type ApiResult, type RelayEvent } from '../../middleware/http';
import { apiHandler, type ApiHandler, type ChainDeps } from './chain';

export interface AdminKeysDeps extends ChainDeps {
  readonly store: CallerKeyStore;
  readonly sealer: KeySealer;
  /** Each key's SSH public key (issue 37 §2); absent: keys carry none. */
  readonly sshKeys?: KeySshKeys;
  /** @default 32 random bytes, base64url, prefixed `rk_` */
  readonly newSecret?: () => string;
}

const nowSeconds = (deps: AdminKeysDeps): number => Math.floor((deps.now ?? Date.now)() / 1000);

/** A new key's secret: 256 random bits. */
export const newKeySecret = (): string => `rk_${randomBytes(32).toString('base64url')}`;

const createKey = async (event: RelayEvent, deps: AdminKeysDeps): Promise<ApiResult> => {
  const parsed = parseBody(CreateKeyBodySchema, event.jsonBody ?? {});
  if (!parsed.ok) throw httpError(400, parsed.error);
  const { ssh_public_key: sshKey, ...fields } = parsed.value;
  const secret = (deps.newSecret ?? newKeySecret)();
  const built = newKeyRecord(fields, await deps.sealer.seal(secret), nowSeconds(deps));
  if (!built.ok) throw httpError(400, built.error);
  const added = await deps.store.add(built.record).catch((error: unknown) => {
    // The 201st key (issue 29 §7): a 409 the operator can act on (delete revoked keys), never a 500.
    if (error instanceof KeyLimitReachedError) throw httpError(409, error.message);
    throw error;
  });
  if (!added) throw httpError(409, `key ${built.record.name} exists (names are never reused, even revoked)`);
  // After the key: a failed write leaves a key without its SSH key (PUT …/ssh-key sets it), never the reverse.
  if (sshKey !== undefined) await requireSshKeys(deps).put(built.record.name, sshKey, nowSeconds(deps));
  logger.info('caller key created', { key: built.record.name, scopes: built.record.scopes.join(',') });
  return jsonResponse(
    201,
    {
      ...keyView(built.record, nowSeconds(deps)),
      ...(sshKey !== undefined ? { ssh_key_fingerprint: fingerprintOf(sshKey) } : {}),
      secret,
      note: 'The secret is shown only now; the relay keeps it encrypted and cannot show it again.',
    },
    { 'Cache-Control': 'no-store' },
  );
};

const listKeys = async (_event: RelayEvent, deps: AdminKeysDeps): Promise<ApiResult> => {
  const records = await deps.store.list({ fresh: true });
  // Each key's SSH key by its fingerprint (issue 37 §2), never the line itself.
  const sshKeys = (await deps.sshKeys?.getMany?.(records.map((r) => r.name))) ?? new Map<string, string>();
  return jsonResponse(200, {
    keys: records.map((r) => {
      const line = sshKeys.get(r.name);
      return {
        ...keyView(r, nowSeconds(deps)),
        ...(line !== undefined ? { ssh_key_fingerprint: fingerprintOf(line) } : {}),
      };
    }),
  });
};

const revokeKey = async (event: RelayEvent, deps: AdminKeysDeps): Promise<ApiResult> => {
  const name = event.pathParameters?.name ?? /^\/admin\/keys\/([^/]+)\/revoke$/.exec(event.rawPath ?? '')?.[1];
  if (!name || !/^[a-z0-9][a-z0-9_-]{0,63}$/.test(name)) throw httpError(400, 'Invalid key name');
  const outcome = await deps.store.revoke(name, nowSeconds(deps));
  if (outcome === 'unknown') throw httpError(404, `no key ${name}`);
  if (outcome === 'revoked') logger.info('caller key revoked', { key: name });
  return jsonResponse(200, { name, status: 'revoked', ...(outcome === 'already' ? { already: true } : {}) });
};

/** DELETE /admin/keys/{name}: a revoked key stops counting against the 200 (its name stays taken 30 days). */
const deleteKey = async (event: RelayEvent, deps: AdminKeysDeps): Promise<ApiResult> => {
  const name = event.pathParameters?.name ?? /^\/admin\/keys\/([^/]+)$/.exec(event.rawPath ?? '')?.[1];
  if (!name || !/^[a-z0-9][a-z0-9_-]{0,63}$/.test(name)) throw httpError(400, 'Invalid key name');
  const outcome = await deps.store.remove(name, nowSeconds(deps));
  if (outcome === 'unknown') throw httpError(404, `no key ${name}`);
  if (outcome === 'active') throw httpError(409, `key ${name} is not revoked (revoke it first)`);
  await deps.sshKeys?.remove(name);
  logger.info('caller key deleted', { key: name });
  return jsonResponse(200, { name, status: 'deleted' });
};

const requireSshKeys = (deps: AdminKeysDeps): KeySshKeys => {
  if (!deps.sshKeys) throw new Error('no SSH key store configured for the admin key routes');
  return deps.sshKeys;
};

/** The fingerprint of a line the body schema already accepted. */
const fingerprintOf = (line: string): string => {
  const parsed = parseSshPublicKey(line);
  return parsed.ok ? parsed.value.fingerprint : 'unknown';
};

/** PUT /admin/keys/{name}/ssh-key (issue 37 §2): sets or replaces the key's SSH public key; orders by it without one carry it. */
const setSshKey = async (event: RelayEvent, deps: AdminKeysDeps): Promise<ApiResult> => {
  const name = event.pathParameters?.name ?? /^\/admin\/keys\/([^/]+)\/ssh-key$/.exec(event.rawPath ?? '')?.[1];
  if (!name || !KEY_NAME_PATTERN.test(name)) throw httpError(400, 'Invalid key name');
  const parsed = parseBody(SshKeyBodySchema, event.jsonBody ?? {});
  if (!parsed.ok) throw httpError(400, parsed.error);
  const record = (await deps.store.list({ fresh: true })).find((r) => r.name === name);
  if (!record) throw httpError(404, `no key ${name}`);
  if (record.revoked_at !== undefined) throw httpError(409, `key ${name} is revoked`);
  await requireSshKeys(deps).put(name, parsed.value.ssh_public_key, nowSeconds(deps));
  const fingerprint = fingerprintOf(parsed.value.ssh_public_key);
  logger.info('caller key ssh key set', { key: name, fingerprint });
  return jsonResponse(200, { name, ssh_key_fingerprint: fingerprint });
};

export const createAdminKeysSshKeyHandler = (deps: () => AdminKeysDeps): ApiHandler =>
  apiHandler({ routeId: 'AdminKeysSshKey', deps, json: true }, setSshKey);

export const createAdminKeysCreateHandler = (deps: () => AdminKeysDeps): ApiHandler =>
  apiHandler({ routeId: 'AdminKeysCreate', deps, json: true }, createKey);
export const createAdminKeysListHandler = (deps: () => AdminKeysDeps): ApiHandler =>
  apiHandler({ routeId: 'AdminKeysList', deps }, listKeys);
export const createAdminKeysRevokeHandler = (deps: () => AdminKeysDeps): ApiHandler =>
  apiHandler({ routeId: 'AdminKeysRevoke', deps }, revokeKey);
export const createAdminKeysDeleteHandler = (deps: () => AdminKeysDeps): ApiHandler =>
  apiHandler({ routeId: 'AdminKeysDelete', deps }, deleteKey);
