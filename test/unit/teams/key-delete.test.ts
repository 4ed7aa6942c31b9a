/**
 * Issue 29 §7: DELETE /admin/keys/{name} deletes a revoked key (it stops counting against the 200;
 * its name is never reused), and the 201st create answers 409 `key limit reached (200)`, never 500.
 * The admin handlers over an in-memory store, and the DynamoDB store itself on dynalite.
 */
import { DynamoDbCallerKeys } from '../../../lambdas/adapters/dynamodb/dynamodb-caller-keys';
import {
  KeyLimitReachedError,
  MAX_CALLER_KEYS,
  resolveCallerKey,
  type CallerKeyRecord,
} from '../../../lambdas/domain/teams/caller-keys';
import {
  createAdminKeysCreateHandler,
  createAdminKeysDeleteHandler,
  createAdminKeysRevokeHandler,
} from '../../../lambdas/handlers/api/admin-keys';
import { apiEvent, lambdaContext, v2Headers } from '../../fixtures/events/api-event';
import { FakeCallerKeyStore, fakeSealer } from '../../fakes/caller-keys';
import { acceptFakes } from '../../fakes/deps';
import { SECRET } from '../../fakes/env';
import { startDynalite, type LocalDynamo } from '../../helpers/dynalite';
import { parseResult } from '../../helpers/parse-result';

const NOW_S = 1_700_000_000;
const record = (name: string, over: Partial<CallerKeyRecord> = {}): CallerKeyRecord => ({
  name,
  scopes: ['order'],
  secret: `sealed-${name}`,
  created_at: NOW_S - 10,
  ...over,
});

describe('Admin routes: the key limit and DELETE /admin/keys/{name}', () => {
  const setup = async () => {
    const { fakes, deps } = acceptFakes({ MAX_REQUESTS_PER_MINUTE: '600' });
    const store = new FakeCallerKeyStore();
    await store.add(record('ci', { scopes: ['order', 'read'], secret: await fakeSealer.seal('ci-secret') }));
    const keyed = {
      ...deps,
      callerKeys: (name: string) =>
        resolveCallerKey({ store, sealer: fakeSealer }, name, Math.floor(fakes.clock / 1000)),
      store,
      sealer: fakeSealer,
      newSecret: () => 'rk_new-secret',
    };
    const create = createAdminKeysCreateHandler(() => keyed);
    const revoke = createAdminKeysRevokeHandler(() => keyed);
    const remove = createAdminKeysDeleteHandler(() => keyed);
    const createKey = async (name: string) => {
      const body = JSON.stringify({ name, scopes: ['order'] });
      return parseResult(
        await create(
          apiEvent({ path: '/admin/keys', body, headers: v2Headers(SECRET, 'POST', '/admin/keys', body) }),
          lambdaContext(),
        ),
      );
    };
    const revokeKey = async (name: string) => {
      const path = `/admin/keys/${name}/revoke`;
      return parseResult(
        await revoke(
          {
            ...apiEvent({ path, body: '', headers: v2Headers(SECRET, 'POST', path, '') }),
            pathParameters: { name },
          },
          lambdaContext(),
        ),
      );
    };
    const deleteKey = async (name: string, secret = SECRET, keyId?: string) => {
      const path = `/admin/keys/${name}`;
      return parseResult(
        await remove(
          {
            ...apiEvent({
              method: 'DELETE',
              path,
              headers: { ...v2Headers(secret, 'DELETE', path), ...(keyId ? { 'x-webhook-key-id': keyId } : {}) },
            }),
            pathParameters: { name },
          },
          lambdaContext(),
        ),
      );
    };
    return { store, createKey, revokeKey, deleteKey };
  };

  it('answers the 201st create 409 `key limit reached (200)`; deleting a revoked key makes room', async () => {
    const { store, createKey, revokeKey, deleteKey } = await setup();
    for (let i = store.records.size; i < MAX_CALLER_KEYS; i += 1)
      expect((await createKey(`k${i}`)).statusCode).toBe(201);
    expect(await createKey('one-more')).toMatchObject({ statusCode: 409, body: { error: 'key limit reached (200)' } });
    // Revoking alone does not make room: revoked keys count until deleted.
    expect((await revokeKey('k5')).statusCode).toBe(200);
    expect((await createKey('one-more')).statusCode).toBe(409);
    expect(await deleteKey('k5')).toMatchObject({ statusCode: 200, body: { name: 'k5', status: 'deleted' } });
    expect((await createKey('one-more')).statusCode).toBe(201);
    // The deleted name is never reused (it names that key's orders).
    expect((await deleteKey('k6')).statusCode).toBe(409);
    expect(await createKey('k5')).toMatchObject({
      statusCode: 409,
      body: { error: 'key k5 exists (names are never reused, even revoked)' },
    });
  });

  it('refuses to delete an active key (409), an unknown one (404), and a caller without scope admin (403)', async () => {
    const { store, deleteKey } = await setup();
    expect(await deleteKey('ci')).toMatchObject({
      statusCode: 409,
      body: { error: 'key ci is not revoked (revoke it first)' },
    });
    expect(await deleteKey('nope')).toMatchObject({ statusCode: 404, body: { error: 'no key nope' } });
    expect(await deleteKey('ci', 'ci-secret', 'ci')).toMatchObject({
      statusCode: 403,
      body: { error: 'key ci may not admin' },
    });
    expect(store.records.has('ci')).toBe(true);
  });
});

describe('Adapter: DynamoDbCallerKeys remove and the key limit (dynalite)', () => {
  let db: LocalDynamo;
  beforeAll(async () => {
    db = await startDynalite();
  });
  afterAll(async () => db.close());

  it('throws KeyLimitReachedError at the 201st, deletes only revoked keys, never reuses a deleted name', async () => {
    const store = new DynamoDbCallerKeys(db.doc, db.tableName, 0);
    for (let i = 0; i < MAX_CALLER_KEYS; i += 20)
      await Promise.all(Array.from({ length: 20 }, (_, j) => store.add(record(`k${i + j}`))));
    await expect(store.add(record('late'))).rejects.toThrow(new KeyLimitReachedError(200));
    expect(await store.remove('k1', NOW_S)).toBe('active');
    expect(await store.remove('nope', NOW_S)).toBe('unknown');
    expect(await store.revoke('k1', NOW_S)).toBe('revoked');
    expect(await store.remove('k1', NOW_S)).toBe('deleted');
    expect(await store.remove('k1', NOW_S)).toBe('unknown');
    expect((await store.list()).map((r) => r.name)).not.toContain('k1');
    expect(await store.add(record('late'))).toBe(true);
    expect(await store.add(record('k1', { secret: 'other' }))).toBe(false);
    await expect(store.add(record('later'))).rejects.toBeInstanceOf(KeyLimitReachedError);
  });
});
