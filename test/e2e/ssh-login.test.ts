/**
 * "Ready" means you can log in (issue 31 §4), end to end in both dialects (jest projects `e2e` and
 * `e2e-live`), with READINESS_PROBE=ssh-login (the default): the simulator's ssh endpoints are real
 * SSH servers that answer a banner as soon as the order runs but accept the order's password only
 * after a configurable delay. An order is reported ready only after a login works (the result comes
 * no earlier than the login delay after the order started, and reports the host key), and an order
 * whose password never works is cancelled with the spec's timeout text plus `ssh login refused`.
 */
import { startTestRuntime, testDialect, type LocalRuntime } from '../helpers/local-runtime';
import { e2eCalls, isResult, json, type Json } from '../helpers/e2e-calls';
import { startReceiver, type Receiver } from '../helpers/receivers';
import { orderSshPassword } from '../../lambdas/domain/hosts/ssh-password';

const dialect = testDialect();
const WAIT_MS = 60_000;
/** The readiness window of this file: long enough for LOGIN_DELAY_MS on a loaded machine. */
const READY_TIMEOUT_SECONDS = 12;
/** The simulator accepts the password this long after the banner first answers (production: ~20 s and more). */
const LOGIN_DELAY_MS = 3_000;
/** The key of the relay's own root passwords (issue 38 §4; AWS: SshPasswordSecret). */
const SSH_PASSWORD_SECRET = 'ssh-password-secret-e2e-7Qk2Lm9Xw4Rt8Yv1Zp6N';

describe(`Ready means a login works (${dialect} marketplace dialect)`, () => {
  let runtime: LocalRuntime;
  let callbacks: Receiver;
  const calls = e2eCalls(
    () => runtime,
    () => callbacks,
    WAIT_MS,
  );
  const result = async (tag: string, body: Json): Promise<{ result: Json; receivedAt: number }> => {
    await calls.create(tag, body);
    const received = await callbacks.waitFor((r) => isResult(r, `/${tag}`), WAIT_MS);
    return { result: json(received), receivedAt: Date.now() };
  };

  beforeAll(async () => {
    callbacks = await startReceiver();
    runtime = await startTestRuntime({
      dialect,
      env: {
        READINESS_PROBE: 'ssh-login',
        ORDER_READY_TIMEOUT_SECONDS: String(READY_TIMEOUT_SECONDS),
        SSH_PASSWORD_SECRET,
      },
    });
  });
  afterEach(() => calls.sim().setSshLoginDelay(0));
  afterAll(async () => {
    await runtime?.close();
    await callbacks?.close();
  });

  it('reports an order ready only after its password works, with the host key seen at login', async () => {
    // Prepare: the banner answers at once, the password only LOGIN_DELAY_MS later
    calls.sim().setSshLoginDelay(LOGIN_DELAY_MS);
    // Act
    const { result: ready, receivedAt } = await result('login-delay', { gpu_type: 'RTX 4090' });
    // Assess: success, and not before the login could work
    expect(ready).toMatchObject({ success: true, status: 'running' });
    expect(String(ready.ssh_host_key_sha256)).toMatch(/^SHA256:[A-Za-z0-9+/]{43}$/);
    const order = calls
      .sim()
      .orders()
      .find((o) => o.order_id === ready.order_id);
    expect(order?.started_at).toBeDefined();
    expect(receivedAt - (order?.started_at ?? 0) * 1000).toBeGreaterThanOrEqual(LOGIN_DELAY_MS);
  });

  it('sends a root password keyed by its own secret, never by the marketplace API key, and logs in with it (issue 38 §4)', async () => {
    // Act
    const taskId = await calls.create('own-password', { gpu_type: 'RTX 4090' });
    const ready = json(await callbacks.waitFor((r) => isResult(r, '/own-password'), WAIT_MS));
    // Assess: ready means the login with the password sent worked
    expect(ready).toMatchObject({ success: true, status: 'running' });
    const sent = calls.sim().orderRequest(Number(ready.order_id));
    expect(sent?.ssh_password).toBe(orderSshPassword(SSH_PASSWORD_SECRET, taskId));
    expect(sent?.ssh_password).not.toBe(orderSshPassword(runtime.env.MARKETPLACE_API_KEY ?? '', taskId));
  });

  it('cancels an order whose password is never accepted, naming the refused login', async () => {
    // Prepare
    calls.sim().setSshLoginDelay(null);
    // Act
    const { result: failed } = await result('login-refused', { gpu_type: 'RTX 4090' });
    // Assess: the spec's timeout text plus the reason; the order was cancelled
    expect(failed).toEqual({
      success: false,
      error: `Order creation timed out after ${READY_TIMEOUT_SECONDS} s: ssh login refused`,
    });
    const cancelled = calls
      .sim()
      .orders()
      .filter((o) => o.end_reason === 'cancelled');
    expect(cancelled.length).toBeGreaterThanOrEqual(1);
  });
});
