/**
 * Caller keys (issue 24), unit level: the key rules, the signature chain with X-Webhook-Key-Id and
 * scopes, the admin routes, ownership in the jobs, the per-key hourly limit and the sealer.
 */
import { AesGcmKeySealer, deriveSealingKey } from '../../../lambdas/adapters/caller-key-sealer';
import {
  callerOf,
  DEFAULT_CALLER,
  endOfUtcDay,
  keyUnusableReason,
  mayTouchOrder,
  newKeyRecord,
  resolveCallerKey,
  scopeRefusal,
  taskCallerOf,
  type CallerKeyRecord,
} from '../../../lambdas/domain/teams/caller-keys';
import { reserveQuota } from '../../../lambdas/domain/create-order/reserve-quota';
import type { WorkflowState } from '../../../lambdas/domain/create-order/workflow-state';
import { runJob, type JobDeps, type TypedJobMessage } from '../../../lambdas/domain/requests/jobs';
import type { TaskRecord } from '../../../lambdas/domain/task';
import {
  createAdminKeysCreateHandler,
  createAdminKeysListHandler,
  createAdminKeysRevokeHandler,
} from '../../../lambdas/handlers/api/admin-keys';
import { createCancelOrderHandler } from '../../../lambdas/handlers/api/cancel-order';
import { createGetTaskHandler } from '../../../lambdas/handlers/api/get-task';
import { createStatusHandler } from '../../../lambdas/handlers/api/status';
import { apiEvent, lambdaContext, sign, v2Headers } from '../../fixtures/events/api-event';
import { anOrder } from '../../fakes/builders';
import { FakeCallerKeyStore, fakeSealer } from '../../fakes/caller-keys';
import { acceptFakes, jobFakes } from '../../fakes/deps';
import { SECRET } from '../../fakes/env';
import { FakeSlidingWindow } from '../../fakes/sliding-window';
import { parseResult } from '../../helpers/parse-result';

const NOW_S = 1_700_000_000;
const record = (over: Partial<CallerKeyRecord> = {}): CallerKeyRecord => ({
  name: 'ci',
  scopes: ['order', 'read'],
  secret: 'sealed:',
  created_at: NOW_S - 10,
  ...over,
});

describe('Caller keys: rules', () => {
  it("refuses a missing scope with the issue's text and lets the default key do everything", () => {
    expect(scopeRefusal(callerOf(record()), 'cancel')).toBe('key ci may not cancel');
    expect(scopeRefusal(callerOf(record()), 'order')).toBeUndefined();
    for (const scope of ['order', 'cancel', 'read', 'admin'] as const)
      expect(scopeRefusal(DEFAULT_CALLER, scope)).toBeUndefined();
  });

  it('treats revoked and expired keys as unusable and unknown names as unknown', () => {
    expect(keyUnusableReason(undefined, NOW_S)).toBe('unknown');
    expect(keyUnusableReason(record({ revoked_at: NOW_S - 1 }), NOW_S)).toBe('revoked');
    expect(keyUnusableReason(record({ expires_at: NOW_S }), NOW_S)).toBe('expired');
    expect(keyUnusableReason(record({ expires_at: NOW_S + 1 }), NOW_S)).toBeUndefined();
  });

  it('lets a key touch only its own orders; default and admin keys touch all', () => {
    const ci = taskCallerOf(callerOf(record()));
    expect(mayTouchOrder(ci, 'ci')).toBe(true);
    expect(mayTouchOrder(ci, 'other')).toBe(false);
    expect(mayTouchOrder(ci, undefined)).toBe(false);
    expect(mayTouchOrder(taskCallerOf(DEFAULT_CALLER), 'other')).toBe(true);
    expect(mayTouchOrder(taskCallerOf(callerOf(record({ scopes: ['admin'] }))), 'other')).toBe(true);
    expect(taskCallerOf(DEFAULT_CALLER)).toBeUndefined();
  });

  it('expires a key at the end of its UTC day and refuses a date in the past', () => {
    expect(endOfUtcDay('2027-01-31')).toBe(Date.UTC(2027, 1, 1) / 1000);
    expect(endOfUtcDay('2027-02-30')).toBeUndefined();
    expect(newKeyRecord({ name: 'ci', scopes: ['order'], expires: '2020-01-01' }, 's', NOW_S)).toEqual({
      ok: false,
      error: 'expires must be today or later (UTC)',
    });
  });

  it('resolves a key created after the cache was filled, and never a revoked one', async () => {
    const store = new FakeCallerKeyStore();
    const secretOf = await fakeSealer.seal('rk_x');
    await store.add(record({ secret: secretOf }));
    expect(await resolveCallerKey({ store, sealer: fakeSealer }, 'ci', NOW_S)).toMatchObject({
      caller: { key: 'ci' },
      secret: 'rk_x',
    });
    await store.revoke('ci', NOW_S);
    expect(await resolveCallerKey({ store, sealer: fakeSealer }, 'ci', NOW_S)).toBeUndefined();
    expect(await resolveCallerKey({ store, sealer: fakeSealer }, 'nobody', NOW_S)).toBeUndefined();
  });
});

describe('Caller keys: the sealer', () => {
  it('round-trips a secret, never stores it in clear, and refuses a secret sealed under another key', async () => {
    const sealer = new AesGcmKeySealer(async () => deriveSealingKey('one'));
    const sealed = await sealer.seal('rk_secret-value');
    expect(sealed).not.toContain('rk_secret-value');
    expect(await sealer.open(sealed)).toBe('rk_secret-value');
    await expect(new AesGcmKeySealer(async () => deriveSealingKey('two')).open(sealed)).rejects.toThrow();
  });
});

/** The signed routes with a key store holding `ci` (order, read) and `ops` (cancel, read). */
const keyedFakes = async () => {
  const { fakes, deps } = acceptFakes();
  const store = new FakeCallerKeyStore();
  await store.add(record({ name: 'ci', scopes: ['order', 'read'], secret: await fakeSealer.seal('ci-secret') }));
  await store.add(record({ name: 'ops', scopes: ['cancel', 'read'], secret: await fakeSealer.seal('ops-secret') }));
  await store.add(record({ name: 'root', scopes: ['admin'], secret: await fakeSealer.seal('root-secret') }));
  const keyed = {
    ...deps,
    callerKeys: (name: string) => resolveCallerKey({ store, sealer: fakeSealer }, name, Math.floor(fakes.clock / 1000)),
    store,
    sealer: fakeSealer,
    newSecret: () => 'rk_new-secret',
  };
  return { fakes, keyed, store };
};
/** A v2-signed POST (caller keys and the admin routes need v2: issue 29). */
const post = (path: string, body: string, secret: string, keyId?: string) =>
  apiEvent({
    path,
    body,
    headers: { ...v2Headers(secret, 'POST', path, body), ...(keyId ? { 'x-webhook-key-id': keyId } : {}) },
  });
/** The same POST signed v1 (body only), as the spec signs. */
const postV1 = (path: string, body: string, secret: string, keyId?: string) =>
  apiEvent({
    path,
    body,
    headers: { 'x-webhook-signature': sign(secret, body), ...(keyId ? { 'x-webhook-key-id': keyId } : {}) },
  });

describe('Caller keys: the signature chain', () => {
  it('403 `key ci may not cancel` and nothing queued for a key without the scope', async () => {
    const { fakes, keyed } = await keyedFakes();
    const handler = createCancelOrderHandler(() => keyed);
    const result = parseResult(
      await handler(post('/webhook/cancel-order', '{"order_id":7}', 'ci-secret', 'ci'), lambdaContext()),
    );
    expect(result).toMatchObject({ statusCode: 403, body: { error: 'key ci may not cancel' } });
    expect(fakes.queue.sent).toHaveLength(0);
    expect(fakes.tasks.records.size).toBe(0);
  });

  it("401 Invalid signature for an unknown key, a revoked key and a key signed with another key's secret", async () => {
    const { fakes, keyed, store } = await keyedFakes();
    const handler = createCancelOrderHandler(() => keyed);
    const body = '{"order_id":7}';
    for (const [secret, id] of [
      ['x', 'nobody'],
      ['ci-secret', 'ops'],
      [SECRET, 'ops'],
    ] as const) {
      const result = parseResult(await handler(post('/webhook/cancel-order', body, secret, id), lambdaContext()));
      expect(result).toMatchObject({ statusCode: 401, body: { error: 'Invalid signature' } });
    }
    await store.revoke('ops', NOW_S);
    const revoked = parseResult(
      await handler(post('/webhook/cancel-order', body, 'ops-secret', 'ops'), lambdaContext()),
    );
    expect(revoked).toMatchObject({ statusCode: 401, body: { error: 'Invalid signature' } });
    expect(fakes.queue.sent).toHaveLength(0);
  });

  it("queues a key's task with its caller in the origin; the shared secret keeps the spec's origin", async () => {
    const { fakes, keyed } = await keyedFakes();
    const handler = createCancelOrderHandler(() => keyed);
    expect(
      parseResult(await handler(post('/webhook/cancel-order', '{"order_id":7}', 'ops-secret', 'ops'), lambdaContext()))
        .statusCode,
    ).toBe(202);
    expect(
      parseResult(await handler(post('/webhook/cancel-order', '{"order_id":8}', SECRET), lambdaContext())).statusCode,
    ).toBe(202);
    expect(fakes.queue.sent.map((m) => m.origin)).toEqual([
      { source: 'webhook', caller: { key: 'ops', sees_all: false } },
      { source: 'webhook' },
    ]);
  });

  it('refuses a key id when the route has no key lookup wired', async () => {
    const { deps } = acceptFakes();
    const handler = createStatusHandler(() => deps);
    const result = parseResult(await handler(post('/webhook/status', '{}', SECRET, 'ci'), lambdaContext()));
    expect(result).toMatchObject({ statusCode: 401, body: { error: 'Invalid signature' } });
  });

  it("hides another key's task from GET /webhook/tasks/{id}", async () => {
    const { fakes, keyed } = await keyedFakes();
    const id = '6f1c0d9e-1111-4222-8333-444455556666';
    await fakes.tasks.create({
      task_id: id,
      kind: 'status',
      state: 'queued',
      request: {},
      origin: { source: 'webhook', caller: { key: 'ci', sees_all: false } },
      created_at: '2023-11-14T22:13:20.000Z',
      updated_at: '2023-11-14T22:13:20.000Z',
    });
    const handler = createGetTaskHandler(() => ({ ...keyed, window: new FakeSlidingWindow() }));
    const get = async (secret: string, keyId?: string) => {
      const path = `/webhook/tasks/${id}`;
      return parseResult(
        await handler(
          apiEvent({
            method: 'GET',
            path,
            pathParameters: { task_id: id },
            headers: keyId
              ? { ...v2Headers(secret, 'GET', path), 'x-webhook-key-id': keyId }
              : { 'x-webhook-signature': sign(secret, path) },
          }),
          lambdaContext(),
        ),
      );
    };
    expect((await get('ci-secret', 'ci')).statusCode).toBe(200);
    expect(await get('ops-secret', 'ops')).toMatchObject({ statusCode: 404, body: { error: 'Task not found' } });
    expect((await get(SECRET)).statusCode).toBe(200);
  });
});

describe('Caller keys: admin routes', () => {
  it('creates a key (secret shown once, stored sealed), lists it without a secret, revokes it', async () => {
    const { keyed, store } = await keyedFakes();
    const create = createAdminKeysCreateHandler(() => keyed);
    const body = JSON.stringify({
      name: 'build',
      scopes: ['order', 'read'],
      orders_per_hour: 5,
      budget_usd_per_day: 20,
      expires: '2027-01-31',
    });
    const created = parseResult(await create(post('/admin/keys', body, 'root-secret', 'root'), lambdaContext()));
    expect(created).toMatchObject({
      statusCode: 201,
      body: {
        name: 'build',
        secret: 'rk_new-secret',
        status: 'active',
        orders_per_hour: 5,
        expires_at: '2027-02-01T00:00:00.000Z',
      },
    });
    expect(store.records.get('build')?.secret).not.toContain('rk_new-secret');
    expect(parseResult(await create(post('/admin/keys', body, SECRET), lambdaContext()))).toMatchObject({
      statusCode: 409,
    });
    expect(parseResult(await create(post('/admin/keys', body, 'ci-secret', 'ci'), lambdaContext()))).toMatchObject({
      statusCode: 403,
      body: { error: 'key ci may not admin' },
    });

    const list = createAdminKeysListHandler(() => keyed);
    const listed = parseResult(
      await list(
        apiEvent({
          method: 'GET',
          path: '/admin/keys',
          headers: v2Headers(SECRET, 'GET', '/admin/keys'),
        }),
        lambdaContext(),
      ),
    );
    expect(listed.statusCode).toBe(200);
    expect(JSON.stringify(listed.body)).not.toMatch(/secret|sealed/);

    const revoke = createAdminKeysRevokeHandler(() => keyed);
    const revokeEvent = (name: string) => ({
      ...post(`/admin/keys/${name}/revoke`, '', SECRET),
      pathParameters: { name },
    });
    expect(parseResult(await revoke(revokeEvent('build'), lambdaContext()))).toMatchObject({
      statusCode: 200,
      body: { name: 'build', status: 'revoked' },
    });
    expect(parseResult(await revoke(revokeEvent('build'), lambdaContext()))).toMatchObject({
      statusCode: 200,
      body: { already: true },
    });
    expect(parseResult(await revoke(revokeEvent('nope'), lambdaContext()))).toMatchObject({
      statusCode: 404,
      body: { error: 'no key nope' },
    });
  });

  it("during a key revoke (crash point, AWS): the function dies after the write, before its answer; the client's retry answers revoked, the key is revoked once and no other key changes", async () => {
    // Prepare: the first revoke lands and its invocation never answers (timed out or died there)
    const { keyed, store } = await keyedFakes();
    const before = new Map(store.records);
    const revoke = createAdminKeysRevokeHandler(() => keyed);
    const revokeEvent = () => ({ ...post('/admin/keys/ci/revoke', '', SECRET), pathParameters: { name: 'ci' } });
    let reached!: () => void;
    const crashed = new Promise<void>((resolve) => (reached = resolve));
    const write = store.revoke.bind(store);
    store.revoke = async (name, nowSeconds) => {
      store.revoke = write;
      await write(name, nowSeconds);
      reached();
      return new Promise<never>(() => undefined);
    };
    void revoke(revokeEvent(), lambdaContext());
    await crashed;
    const revokedAt = store.records.get('ci')?.revoked_at;
    expect(revokedAt).toEqual(expect.any(Number));
    // Act: the client, with no answer, sends the same request again
    const retried = parseResult(await revoke(revokeEvent(), lambdaContext()));
    // Assess
    expect(retried).toMatchObject({ statusCode: 200, body: { name: 'ci', status: 'revoked', already: true } });
    expect(store.records.get('ci')).toEqual({ ...before.get('ci'), revoked_at: revokedAt });
    for (const name of ['ops', 'root']) expect(store.records.get(name)).toEqual(before.get(name));
  });

  it('401 `signature v2 required for this route` for a valid v1 signature on an admin route or with a key id; `Invalid signature` for a wrong one', async () => {
    const { fakes, keyed, store } = await keyedFakes();
    const create = createAdminKeysCreateHandler(() => keyed);
    const body = JSON.stringify({ name: 'v1key', scopes: ['read'] });
    expect(parseResult(await create(postV1('/admin/keys', body, SECRET), lambdaContext()))).toMatchObject({
      statusCode: 401,
      body: { error: 'signature v2 required for this route' },
    });
    expect(parseResult(await create(postV1('/admin/keys', body, 'wrong'), lambdaContext()))).toMatchObject({
      statusCode: 401,
      body: { error: 'Invalid signature' },
    });
    const cancel = createCancelOrderHandler(() => keyed);
    expect(
      parseResult(
        await cancel(postV1('/webhook/cancel-order', '{"order_id":7}', 'ops-secret', 'ops'), lambdaContext()),
      ),
    ).toMatchObject({ statusCode: 401, body: { error: 'signature v2 required for this route' } });
    expect(
      parseResult(await cancel(postV1('/webhook/cancel-order', '{"order_id":7}', 'ci-secret', 'ops'), lambdaContext())),
    ).toMatchObject({ statusCode: 401, body: { error: 'Invalid signature' } });
    expect(store.records.has('v1key')).toBe(false);
    expect(fakes.queue.sent).toHaveLength(0);
  });

  it('400 on bad bodies: default name, unknown scope, no scopes', async () => {
    const { keyed } = await keyedFakes();
    const create = createAdminKeysCreateHandler(() => keyed);
    for (const body of [
      { name: 'default', scopes: ['order'] },
      { name: 'x', scopes: ['delete'] },
      { name: 'x', scopes: [] },
      { name: 'Bad Name', scopes: ['read'] },
    ]) {
      const text = JSON.stringify(body);
      expect(parseResult(await create(post('/admin/keys', text, SECRET), lambdaContext())).statusCode).toBe(400);
    }
  });
});

describe("Caller keys: jobs act only on the key's own orders", () => {
  const message = (kind: 'cancel-order' | 'status', key?: string): TypedJobMessage =>
    ({
      task_id: 't1',
      kind,
      input: kind === 'cancel-order' ? { order_id: 1 } : {},
      origin: { source: 'webhook', ...(key ? { caller: { key, sees_all: false } } : {}) },
    }) as TypedJobMessage;

  it("refuses to cancel another key's order (no marketplace call) and cancels its own", async () => {
    const { deps, leases, marketplace } = jobFakes();
    await leases.track({ order_id: 1, task_id: 'placer', key: 'ci' }, { now: NOW_S, status: 'running' });
    expect(await runJob(message('cancel-order', 'ops'), deps, NOW_S * 1000)).toEqual({
      success: false,
      error: 'order 1 is not an order of key ops',
    });
    expect(marketplace.cancelCalls).toEqual([]);
    expect(await runJob(message('cancel-order', 'ci'), deps, NOW_S * 1000)).toMatchObject({
      success: true,
      order_id: 1,
    });
  });

  it("refuses to cancel another key's standing order (cancel-task, issue 29): nothing leaves the queue; its own and the default key's cancel", async () => {
    const { deps, tasks } = jobFakes();
    const removed: string[] = [];
    // Only `get` and `remove` are used by cancel-task; a stub keeps this test off the queue's storage shape.
    const waiting = {
      get: async (taskId: string) => ({ task_id: taskId, round: 1 }),
      remove: async (taskId: string) => {
        removed.push(taskId);
        return true;
      },
    } as unknown as JobDeps['waiting'];
    const standing = (id: string, key: string): TaskRecord => ({
      task_id: id,
      kind: 'create-order',
      state: 'waiting',
      request: { gpu_type: 'A100' },
      origin: { source: 'webhook', caller: { key, sees_all: false } },
      created_at: '2023-11-14T22:13:20.000Z',
      updated_at: '2023-11-14T22:13:20.000Z',
    });
    const a = '6f1c0d9e-1111-4222-8333-00000000000a';
    const b = '6f1c0d9e-1111-4222-8333-00000000000b';
    await tasks.create(standing(a, 'ops'));
    await tasks.create(standing(b, 'ops'));
    const cancel = (taskId: string, key?: string): TypedJobMessage =>
      ({
        task_id: 'c1',
        kind: 'cancel-task',
        input: { task_id: taskId },
        origin: { source: 'webhook', ...(key ? { caller: { key, sees_all: false } } : {}) },
      }) as TypedJobMessage;
    expect(await runJob(cancel(a, 'ci'), { ...deps, waiting }, NOW_S * 1000)).toEqual({
      success: false,
      error: `task ${a} is not a task of key ci`,
    });
    expect(removed).toEqual([]);
    expect(await runJob(cancel(a, 'ops'), { ...deps, waiting }, NOW_S * 1000)).toMatchObject({ success: true });
    expect(await runJob(cancel(b), { ...deps, waiting }, NOW_S * 1000)).toMatchObject({ success: true });
    expect(removed).toEqual([a, b]);
  });

  it("lists only the key's orders in status; the default key sees all", async () => {
    const { deps, leases, marketplace } = jobFakes();
    marketplace.orders = [
      anOrder(1, { status: 'running' }),
      anOrder(2, { status: 'running' }),
      anOrder(3, { status: 'running' }),
    ];
    const orders = marketplace.orders;
    await leases.track(
      { order_id: orders[0].order_id, task_id: 'placer', key: 'ci' },
      { now: NOW_S, status: 'running' },
    );
    const mine = await runJob(message('status', 'ci'), deps, NOW_S * 1000);
    expect(mine).toMatchObject({ total_orders: 1, orders: [{ order_id: orders[0].order_id }] });
    const all = await runJob(message('status'), deps, NOW_S * 1000);
    expect(all).toMatchObject({ total_orders: orders.length });
  });
});

describe('Caller keys: per-key orders per hour', () => {
  it("refuses the key's order past its own limit while the account-wide cap still has room", async () => {
    const quota = new FakeSlidingWindow();
    const state = (taskId: string) =>
      ({
        task_id: taskId,
        origin: { source: 'webhook', caller: { key: 'ci', orders_per_hour: 1 } },
        request: {},
        timing: {},
      }) as unknown as WorkflowState;
    const opts = { now: NOW_S * 1000, limit: 10, key: 'QUOTA#orders', keyQuota: (k: string) => `KEYQUOTA#${k}` };
    await reserveQuota(state('a'), { quota }, opts);
    await expect(reserveQuota(state('b'), { quota }, opts)).rejects.toThrow(
      'Hourly order limit of key ci reached (1 per hour)',
    );
    // A retry of the first task counts once.
    await expect(reserveQuota(state('a'), { quota }, opts)).resolves.toBeDefined();
  });
});
