/**
 * The relay's own record of each host (issue 31 §2), end to end in both dialects (jest projects
 * `e2e` and `e2e-live`): a host whose orders failed login twice (the simulator's ssh endpoint never
 * accepts the order's password) is avoided by the third order, which places nothing and says so in
 * its failure text, and GET /webhook/hosts lists the host with its failed starts and avoidance.
 * The host carries a GPU name no catalogue server has, added before the relay's first listing read.
 */
import { startTestRuntime, TEST_WEBHOOK_SECRET, testDialect, type LocalRuntime } from '../helpers/local-runtime';
import { e2eCalls, isResult, json, type Json } from '../helpers/e2e-calls';
import { request, signedPost, signedPostV2, startReceiver, v2Headers, type Receiver } from '../helpers/receivers';
import { uniqueServer } from '../helpers/sim-servers';
import { runCli } from '../unit/cli/run-cli';

const dialect = testDialect();
const WAIT_MS = 60_000;
/** A short readiness window: each failed start takes this long. */
const READY_TIMEOUT_SECONDS = 3;
const HOST = 9961;
/** A host the operator avoids and clears. */
const OPERATOR_HOST = 9962;
/** The host one key's image fails on purpose (issue 38 §3). */
const POISONED_HOST = 9963;

describe(`The relay's record of each host (${dialect} marketplace dialect)`, () => {
  let runtime: LocalRuntime;
  let callbacks: Receiver;
  const calls = e2eCalls(
    () => runtime,
    () => callbacks,
    WAIT_MS,
  );
  const result = async (tag: string, body: Json): Promise<Json> => {
    await calls.create(tag, body);
    return json(await callbacks.waitFor((r) => isResult(r, `/${tag}`), WAIT_MS));
  };
  const hosts = async (key?: string, query = ''): Promise<{ status: number; json: Json }> => {
    const path = `/webhook/hosts${query}`;
    const secret = key ? keySecrets[key] : TEST_WEBHOOK_SECRET;
    const res = await request(`${runtime.url}${path}`, {
      headers: { ...v2Headers(secret, 'GET', path), ...(key ? { 'x-webhook-key-id': key } : {}) },
    });
    return { status: res.status, json: (res.json ?? {}) as Json };
  };
  const keySecrets: Record<string, string> = {};
  const createKey = async (name: string): Promise<void> => {
    const res = await signedPostV2(
      runtime.url,
      '/admin/keys',
      { name, scopes: ['order', 'cancel', 'read'] },
      TEST_WEBHOOK_SECRET,
    );
    expect(res.status).toBe(201);
    keySecrets[name] = String(res.json?.secret);
  };
  /** A create-order as `key` (signature v2 with X-Webhook-Key-Id), and its one result. */
  const resultAs = async (key: string, tag: string, body: Json): Promise<Json> => {
    const res = await signedPostV2(
      runtime.url,
      '/webhook/create-order',
      { callback_url: `${callbacks.url}/${tag}`, ...body },
      keySecrets[key] as string,
      { 'x-webhook-key-id': key },
    );
    expect(res.status).toBe(202);
    return json(await callbacks.waitFor((r) => isResult(r, `/${tag}`), WAIT_MS));
  };

  beforeAll(async () => {
    callbacks = await startReceiver();
    runtime = await startTestRuntime({
      dialect,
      env: {
        READINESS_PROBE: 'ssh-login',
        ORDER_READY_TIMEOUT_SECONDS: String(READY_TIMEOUT_SECONDS),
        HOST_AVOID_AFTER_FAILURES: '2',
        // The host list is polled every 100 ms (calls.until): at the default 60 requests per minute a
        // few slow seconds fill the window and the next read is a 429.
        MAX_REQUESTS_PER_MINUTE: '600',
      },
    });
    calls.sim().addServer(uniqueServer(HOST, 'ZETA L1', calls.sim().nativeCoin));
    calls.sim().addServer(uniqueServer(OPERATOR_HOST, 'ZETA L2', calls.sim().nativeCoin));
    calls.sim().addServer(uniqueServer(POISONED_HOST, 'ZETA L3', calls.sim().nativeCoin));
  });
  afterAll(async () => {
    calls.sim()?.setSshLoginDelay(0);
    await runtime?.close();
    await callbacks?.close();
  });

  it('avoids a host that failed login twice on the third order, and lists it with its record', async () => {
    // Prepare: the only ZETA L1 host never accepts the order's password
    calls.sim().setSshLoginDelay(null);
    // Act: two orders fail to start on it
    for (const tag of ['first', 'second']) {
      const failed = await result(tag, { gpu_type: 'ZETA L1' });
      expect(failed).toEqual({
        success: false,
        error: `Order creation timed out after ${READY_TIMEOUT_SECONDS} s: ssh login refused`,
      });
    }
    const placedBefore = calls.sim().counters().ordersCreated;
    const third = await result('third', { gpu_type: 'ZETA L1' });
    // Assess: the third order is not placed on the avoided host, and the failure text says why
    expect(third).toEqual({
      success: false,
      error: 'No ZETA L1 available; avoided 1 host after failed starts',
    });
    expect(calls.sim().counters().ordersCreated).toBe(placedBefore);
    const listed = await hosts();
    expect(listed.status).toBe(200);
    const line = (listed.json.hosts as Json[]).find((h) => h.server_id === HOST);
    expect(line).toMatchObject({
      placed: 2,
      ready: 0,
      login_refused: 2,
      failures_24h: 2,
      avoided_by: 'auto',
      avoided_reason: '2 failed starts in 24 h (login refused)',
      ready_seconds_median: null,
    });
    expect(Number(line?.avoided_until)).toBeGreaterThan(Date.now() / 1000 + 23 * 3600);
    expect(Number(line?.score)).toBeLessThan(0.5);
    expect(listed.json.avoided).toBeGreaterThanOrEqual(1);
  });

  it('gpu-relay hosts prints the records as a table', async () => {
    // Act
    const printed = await runCli(['hosts'], {
      env: { GPU_RELAY_URL: runtime.url, GPU_RELAY_SECRET: TEST_WEBHOOK_SECRET },
    });
    // Assess: the host of the first test, avoided after its 2 refused logins
    expect(printed).toMatchObject({ code: 0 });
    expect(printed.stdout).toMatch(/^SERVER\s+SCORE\s+PLACED\s+READY\s+TIMEOUTS\s+NO_SSH\s+LOGIN_REFUSED\s+/m);
    expect(printed.stdout).toMatch(
      new RegExp(
        `^${HOST}\\s+0\\.\\d{3}\\s+2\\s+0\\s+0\\s+0\\s+2\\s+0\\s+0\\s+-\\s+2\\s+until .*: 2 failed starts in 24 h \\(login refused\\)$`,
        'm',
      ),
    );
  });

  it('lets an operator avoid a host in every search and clear it again', async () => {
    // Prepare
    calls.sim().setSshLoginDelay(0);
    const admin = (action: string, body: Json = {}) =>
      signedPostV2(runtime.url, `/admin/hosts/${OPERATOR_HOST}/${action}`, body, TEST_WEBHOOK_SECRET);
    // Act: avoid it for 2 hours
    const avoided = await admin('avoid', { hours: 2, reason: 'maintenance' });
    const refused = await result('operator-avoided', { gpu_type: 'ZETA L2' });
    // Assess
    expect(avoided.status).toBe(200);
    expect(avoided.json).toMatchObject({
      server_id: OPERATOR_HOST,
      avoided_by: 'operator',
      avoided_reason: 'maintenance',
    });
    expect(refused).toEqual({ success: false, error: 'No ZETA L2 available; avoided 1 host after failed starts' });
    // Act: clear it, and the next order is placed there
    const cleared = await admin('clear');
    const rented = await result('operator-cleared', { gpu_type: 'ZETA L2' });
    // Assess
    expect(cleared.status).toBe(200);
    expect(cleared.json?.avoided_until).toBeUndefined();
    expect(rented).toMatchObject({ success: true, server_id: OPERATOR_HOST });
  });

  it("leaves a host one key's image failed on purpose available to other keys; a second key's failure avoids it for all (issue 38 §3)", async () => {
    // Prepare: two keys; the host refuses every login while mallory's "image" runs
    await createKey('mallory');
    await createKey('alice');
    calls.sim().setSshLoginDelay(null);
    // Act: mallory fails twice on the only ZETA L3 host
    for (const tag of ['mallory-1', 'mallory-2'])
      expect(await resultAs('mallory', tag, { gpu_type: 'ZETA L3' })).toMatchObject({ success: false });
    const malloryAgain = await resultAs('mallory', 'mallory-3', { gpu_type: 'ZETA L3' });
    calls.sim().setSshLoginDelay(0);
    const alice = await resultAs('alice', 'alice-1', { gpu_type: 'ZETA L3' });
    // Assess: avoided for mallory alone; alice rents it
    expect(malloryAgain).toEqual({ success: false, error: 'No ZETA L3 available; avoided 1 host after failed starts' });
    expect(alice).toMatchObject({ success: true, server_id: POISONED_HOST });
    // A read key sees its own outcomes, not mallory's; the default key sees every key's (the outcomes
    // are recorded after the result is delivered: waited for)
    const lineOf = async (key?: string): Promise<Json | undefined> =>
      ((await hosts(key)).json.hosts as Json[]).find((h) => h.server_id === POISONED_HOST);
    await calls.until(async () => (await lineOf('alice'))?.ready === 1, "alice's ready order recorded");
    const seenByAlice = await lineOf('alice');
    expect(seenByAlice).toMatchObject({ placed: 1, ready: 1, login_refused: 0, failures_24h: 0 });
    expect(seenByAlice).not.toHaveProperty('avoided_until');
    const seenByMallory = await lineOf('mallory');
    expect(seenByMallory).toMatchObject({ placed: 2, ready: 0, login_refused: 2, avoided_scope: 'key' });
    const seenByAll = await lineOf();
    expect(seenByAll).toMatchObject({ placed: 3, ready: 1, login_refused: 2 });
    expect(Object.keys(seenByAll?.avoided_keys as Json)).toEqual(['mallory']);

    // Act: alice's order ends; then her own start fails there too (a second key)
    const cancelled = await signedPostV2(
      runtime.url,
      '/webhook/cancel-order',
      { order_id: alice.order_id, callback_url: `${callbacks.url}/alice-cancel` },
      keySecrets.alice as string,
      { 'x-webhook-key-id': 'alice' },
    );
    expect(cancelled.status).toBe(202);
    await callbacks.waitFor((r) => isResult(r, '/alice-cancel'), WAIT_MS);
    calls.sim().setSshLoginDelay(null);
    expect(await resultAs('alice', 'alice-2', { gpu_type: 'ZETA L3' })).toMatchObject({ success: false });
    const anyone = await result('default-after', { gpu_type: 'ZETA L3' });
    // Assess: every search now leaves it out
    expect(anyone).toEqual({ success: false, error: 'No ZETA L3 available; avoided 1 host after failed starts' });
    expect(await lineOf('alice')).toMatchObject({
      avoided_scope: 'relay',
      avoided_reason: '3 failed starts in 24 h by 2 keys (login refused)',
    });
  });

  it('answers 404 to clearing a host without a record, and creates none (issue 38)', async () => {
    const cleared = await signedPostV2(runtime.url, '/admin/hosts/987654/clear', {}, TEST_WEBHOOK_SECRET);
    expect(cleared).toMatchObject({ status: 404, json: { error: 'no record of host 987654' } });
    const listed = (await hosts()).json.hosts as Json[];
    expect(listed.map((h) => h.server_id)).not.toContain(987654);
  });

  it('refuses a bad avoidance with a 400 naming the field, and a v1 signature on an admin route', async () => {
    const bad = await signedPostV2(
      runtime.url,
      `/admin/hosts/${OPERATOR_HOST}/avoid`,
      { hours: 0 },
      TEST_WEBHOOK_SECRET,
    );
    expect(bad.status).toBe(400);
    expect(bad.json).toEqual({ error: 'hours must be a number greater than 0 and at most 720' });
    const badId = await signedPostV2(runtime.url, '/admin/hosts/abc/avoid', {}, TEST_WEBHOOK_SECRET);
    expect(badId.status).toBe(400);
    const v1 = await signedPost(runtime.url, `/admin/hosts/${OPERATOR_HOST}/avoid`, {}, TEST_WEBHOOK_SECRET);
    expect(v1.status).toBe(401);
  });

  it('refuses GET /webhook/hosts without a signature', async () => {
    const res = await request(`${runtime.url}/webhook/hosts`, {});
    expect(res.status).toBe(401);
  });
});
