/**
 * One signature, one request on one route (issue 29 §1), end to end over real HTTP against the local
 * runtime (dynalite, fauxqs, local Step Functions, the simulator; SIGNATURE_VERSIONS `v1,v2` as under
 * `npm start`). Every signed route's request is captured as its caller sent it (v1 where the route
 * allows v1, v2 always), sent once for real, then replayed byte for byte to every other signed route:
 * each replay is 401, nothing is queued, no order is cancelled and no key changes. A captured v1 GET
 * is replayed as a POST whose body is the signed path (the attack the issue reproduced on
 * `/admin/keys/<name>/revoke`); a captured POST goes with its body. The same bytes to the same route
 * are the first task's answer. Waits are on conditions with deadlines, never fixed sleeps.
 */
import { generateSshKeyPair } from '../helpers/ssh-keys';
import { randomUUID } from 'node:crypto';
import { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { DynamoDBDocumentClient, ScanCommand } from '@aws-sdk/lib-dynamodb';
import { ROUTES, type RouteDefinition } from '../../contract/routes';
import { hmacHex, signedBytes } from '../../lambdas/domain/signing';
import { json, type Json } from '../helpers/e2e-calls';
import { startTestRuntime, TEST_WEBHOOK_SECRET, testDialect, type LocalRuntime } from '../helpers/local-runtime';
import { request, signedPost, startReceiver, v2Headers, type HttpAnswer, type Receiver } from '../helpers/receivers';

const dialect = testDialect();
const WAIT_MS = 45_000;
const SIGNED = ROUTES.filter((r) => r.signed);
const V2_ONLY = (route: RouteDefinition): boolean => route.path.startsWith('/admin/');

/** One request as its caller sent it: method, path with query, body bytes and headers. */
interface Captured {
  readonly route: string;
  readonly version: 'v1' | 'v2';
  readonly method: RouteDefinition['method'];
  readonly path: string;
  readonly body: string;
  readonly headers: Record<string, string>;
}

/** A public key line for PUT /admin/keys/{name}/ssh-key (issue 37 §2). */
const SSH_KEY = generateSshKeyPair('replay@e2e').publicKey.trim();

describe(`Signature v2 and one route per signature (${dialect} marketplace dialect)`, () => {
  let runtime: LocalRuntime;
  let callbacks: Receiver;
  let doc: DynamoDBDocumentClient;
  let victimOrder = 0;
  let seenTask = '';

  const scanCount = async (prefix: string): Promise<number> => {
    const out = await doc.send(
      new ScanCommand({
        TableName: runtime.dynamo.tableName,
        FilterExpression: 'begins_with(pk, :p)',
        ExpressionAttributeValues: { ':p': prefix },
      }),
    );
    return out.Count ?? 0;
  };
  const keyList = async (): Promise<unknown> => {
    const res = await request(`${runtime.url}/admin/keys`, {
      headers: v2Headers(TEST_WEBHOOK_SECRET, 'GET', '/admin/keys'),
    });
    expect(res.status).toBe(200);
    return res.json?.keys;
  };
  const orderStates = (): string =>
    JSON.stringify(
      (runtime.simulator?.control.orders() ?? []).map((o) => {
        const order = o as { order_id: number; status?: string; expired?: boolean };
        return [order.order_id, order.status, order.expired];
      }),
    );

  /** The methods whose requests carry a body (and sign it). */
  const withBody = (method: RouteDefinition['method']): boolean => method === 'POST' || method === 'PUT';
  const send = (c: Captured, method: RouteDefinition['method'], path: string, body?: string): Promise<HttpAnswer> =>
    request(`${runtime.url}${path}`, {
      method,
      headers: { ...(withBody(method) ? { 'content-type': 'application/json' } : {}), ...c.headers },
      ...(withBody(method) ? { body: body ?? c.body } : {}),
    });

  /** A request as a caller signs it for `route` (valid, harmless to send once). */
  const capture = (route: RouteDefinition, version: 'v1' | 'v2', n: number): Captured => {
    const bodies: Record<string, Json> = {
      CreateOrder: { gpu_type: 'NoSuchGpuModel' },
      CancelOrder: { order_id: 999_999 },
      ExtendOrder: { order_id: victimOrder, hours: 1 },
      SetSpotPrice: { order_id: 999_999, desired_price: 1 },
      CancelTask: { task_id: randomUUID() },
      PriceAlert: { gpu_type: 'NoSuchGpuModel', target_price: 0.01 },
      Status: {},
      AdminKeysCreate: { name: `captured-${version}-${n}`, scopes: ['read'] },
      AdminKeysRevoke: {},
      AdminHostsAvoid: { hours: 1, reason: `captured-${version}-${n}` },
      AdminHostsClear: {},
      AdminKeysSshKey: { ssh_public_key: SSH_KEY },
    };
    const path = route.path
      .replace('{task_id}', seenTask)
      .replace(
        '{name}',
        route.id === 'AdminKeysDelete'
          ? `deletable-${version}`
          : route.id === 'AdminKeysSshKey'
            ? `sshkey-${version}`
            : `sacrificial-${version}`,
      )
      .replace('{server_id}', '424242')
      .concat(route.id === 'Spend' ? `?from=2026-01-01&n=${n}` : '');
    const body = !withBody(route.method) || route.id === 'AdminKeysRevoke' ? '' : JSON.stringify(bodies[route.id]);
    const ts = String(Math.floor(Date.now() / 1000));
    const headers =
      version === 'v2'
        ? v2Headers(TEST_WEBHOOK_SECRET, route.method, path, body, ts)
        : {
            'x-webhook-timestamp': ts,
            'x-webhook-signature': hmacHex(TEST_WEBHOOK_SECRET, signedBytes(withBody(route.method) ? body : path, ts)),
          };
    return { route: route.id, version, method: route.method, path, body, headers };
  };

  /** Where a replay to `target` goes: its own path with another task or key than the capture's. */
  const targetPath = (target: RouteDefinition): string =>
    target.path.replace('{task_id}', seenTask).replace('{name}', 'victim').replace('{server_id}', '434343');

  beforeAll(async () => {
    callbacks = await startReceiver();
    // Room for every capture and replay in one rolling minute (the limit is checked before the signature).
    runtime = await startTestRuntime({ dialect, env: { MAX_REQUESTS_PER_MINUTE: '600' } });
    doc = DynamoDBDocumentClient.from(
      new DynamoDBClient({
        endpoint: runtime.dynamo.endpoint,
        region: 'us-east-1',
        credentials: { accessKeyId: 'local', secretAccessKey: 'local' },
      }),
    );
    // A running order (the extend → cancel replay must not cancel it) and keys the replays must not touch.
    const placed = await signedPost(
      runtime.url,
      '/webhook/create-order',
      { gpu_type: 'RTX 4090', callback_url: `${callbacks.url}/victim` },
      TEST_WEBHOOK_SECRET,
    );
    expect(placed.status).toBe(202);
    seenTask = String(placed.json?.task_id);
    const result = await callbacks.waitFor((r) => r.path === '/victim' && json(r).event === undefined, WAIT_MS);
    expect(json(result)).toMatchObject({ success: true });
    victimOrder = json(result).order_id as number;
    for (const name of [
      'victim',
      'sacrificial-v1',
      'sacrificial-v2',
      'deletable-v1',
      'deletable-v2',
      'sshkey-v1',
      'sshkey-v2',
    ]) {
      expect(
        (await signedPost(runtime.url, '/admin/keys', { name, scopes: ['read'] }, TEST_WEBHOOK_SECRET)).status,
      ).toBe(201);
    }
    // DELETE /admin/keys/{name} takes a revoked key only: its captures delete these.
    for (const name of ['deletable-v1', 'deletable-v2']) {
      expect((await signedPost(runtime.url, `/admin/keys/${name}/revoke`, '', TEST_WEBHOOK_SECRET)).status).toBe(200);
    }
  }, 120_000);
  afterAll(async () => {
    doc?.destroy();
    await runtime?.close();
    await callbacks?.close();
  });

  it('the replay matrix: every captured request (v1 where allowed, v2 always) replayed to every other signed route is 401; nothing queued, cancelled or changed', async () => {
    // Prepare: capture and send each request once, as its caller did.
    const captures: Captured[] = [];
    let n = 0;
    for (const route of SIGNED) {
      for (const version of V2_ONLY(route) ? (['v2'] as const) : (['v1', 'v2'] as const)) {
        n += 1;
        const c = capture(route, version, n);
        const first = await send(c, c.method, c.path);
        expect({ route: c.route, version, ok: [200, 201, 202].includes(first.status) }).toEqual({
          route: c.route,
          version,
          ok: true,
        });
        captures.push(c);
      }
    }
    const tasksBefore = await scanCount('TASK#');
    const ordersBefore = orderStates();
    const keysBefore = JSON.stringify(await keyList());

    // Act: every capture to every other signed route, byte for byte.
    const answers: { from: string; version: string; to: string; status: number; error: unknown }[] = [];
    for (const c of captures) {
      for (const target of SIGNED.filter((t) => t.id !== c.route)) {
        // A v1 GET or DELETE signed its path: as a POST, the path is the body its signature covers.
        const body = c.method !== 'POST' && c.version === 'v1' ? c.path : c.body;
        const res = await send(c, target.method, targetPath(target), body);
        answers.push({ from: c.route, version: c.version, to: target.id, status: res.status, error: res.json?.error });
      }
    }

    // Assess
    const v1 = captures.filter((c) => c.version === 'v1').length;
    const v2 = captures.length - v1;
    // The figures of the closing note (printed before the checks, so a failing run shows them too).
    const byStatus = (version: string) =>
      JSON.stringify(
        answers
          .filter((a) => a.version === version)
          .reduce<Record<number, number>>((m, a) => ({ ...m, [a.status]: (m[a.status] ?? 0) + 1 }), {}),
      );
    console.log(
      `replay matrix: ${SIGNED.length} signed routes, ${v1} v1 + ${v2} v2 captures, ${answers.length} replays; ` +
        `v1 statuses ${byStatus('v1')}, v2 statuses ${byStatus('v2')}; not 401: ` +
        JSON.stringify(
          answers.filter((a) => a.status !== 401).map((a) => `${a.version} ${a.from}→${a.to} ${a.status}`),
        ),
    );
    expect({ v1, v2, replays: answers.length }).toEqual({
      v1: SIGNED.filter((r) => !V2_ONLY(r)).length,
      v2: SIGNED.length,
      replays: captures.length * (SIGNED.length - 1),
    });
    expect(answers.filter((a) => a.status !== 401)).toEqual([]);
    expect(new Set(answers.map((a) => a.error))).toEqual(
      new Set(['Invalid signature', 'signature v2 required for this route']),
    );
    expect(await scanCount('TASK#')).toBe(tasksBefore);
    expect(orderStates()).toBe(ordersBefore);
    expect(JSON.stringify(await keyList())).toBe(keysBefore);
    expect(
      runtime.simulator?.control.orders().find((o) => (o as { order_id: number }).order_id === victimOrder),
    ).toMatchObject({ status: 'running' });
  }, 180_000);

  it('the same bytes to the same route are the first task (v1 timestamped and v2); a GET is answered again', async () => {
    const route = SIGNED.find((r) => r.id === 'Status')!;
    for (const version of ['v1', 'v2'] as const) {
      const c = capture(route, version, 1000 + (version === 'v1' ? 1 : 2));
      const first = await send(c, 'POST', c.path);
      const tasks = await scanCount('TASK#');
      const again = await send(c, 'POST', c.path);
      expect(first.status).toBe(202);
      expect({
        status: again.status,
        task: again.json?.task_id,
        replayed: again.headers.get('idempotent-replayed'),
      }).toEqual({ status: 202, task: first.json?.task_id, replayed: 'true' });
      expect(await scanCount('TASK#')).toBe(tasks);
    }
    const get = capture(
      SIGNED.find((r) => r.id === 'GetTask')!,
      'v2',
      1003,
    );
    expect((await send(get, 'GET', get.path)).status).toBe(200);
    expect((await send(get, 'GET', get.path)).status).toBe(200);
  });

  it('refuses a v1 signature on the admin routes and with a key id (`signature v2 required for this route`), and unknown body fields (400)', async () => {
    const body = JSON.stringify({ name: 'never-made', scopes: ['read'] });
    const v1Admin = await request(`${runtime.url}/admin/keys`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'x-webhook-signature': hmacHex(TEST_WEBHOOK_SECRET, body) },
      body,
    });
    expect(v1Admin).toMatchObject({ status: 401, json: { error: 'signature v2 required for this route' } });
    const unknown = await signedPost(
      runtime.url,
      '/webhook/cancel-order',
      { order_id: victimOrder, hours: 2 },
      TEST_WEBHOOK_SECRET,
    );
    expect(unknown).toMatchObject({ status: 400, json: { error: 'unknown field hours' } });
    expect(JSON.stringify(await keyList())).not.toContain('never-made');
  });
});
