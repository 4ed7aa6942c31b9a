/**
 * Slack users mapped to caller keys end to end (issue 24) against the local runtime: the CLI creates
 * keys with `--slack-user`; a command from a mapped user acts with that key's scopes (a missing scope
 * is an ephemeral `key <name> may not <scope>`, nothing queued) and ownership (a cancel of another
 * key's order fails with "not an order of key"); an unmapped user acts as the default key
 * (SLACK_UNMAPPED_USERS=default, the default). Waits are on conditions with deadlines.
 */
import { startTestRuntime, TEST_WEBHOOK_SECRET, testDialect } from '../helpers/local-runtime';
import type { LocalRuntime } from '../helpers/local-runtime';
import { request, signedPost, startReceiver } from '../helpers/receivers';
import type { Receiver } from '../helpers/receivers';
import { runCli } from '../unit/cli/run-cli';

const WAIT_MS = 45_000;
const dialect = testDialect();

describe(`Slack users mapped to caller keys (${dialect} marketplace dialect)`, () => {
  let runtime: LocalRuntime;
  let callbacks: Receiver;
  const secrets: Record<string, string> = {};
  const cliEnv = () => ({ GPU_RELAY_URL: runtime.url, GPU_RELAY_SECRET: TEST_WEBHOOK_SECRET });

  const slash = async (userId: string, text: string) => {
    const res = await request(`${runtime.url}/slack/command`, {
      method: 'POST',
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
      body: new URLSearchParams({ command: '/gpu', team_id: 'T1', user_id: userId, text }).toString(),
    });
    expect(res.status).toBe(200);
    return res.json as { response_type: string; text: string };
  };
  /** The final record of a task, through the CLI (`task --wait` polls GET /webhook/tasks/{id}). */
  const finalRecord = async (taskId: string) => {
    const run = await runCli(['task', taskId, '--wait', '--interval', '0.2', '--timeout', '40'], {
      env: cliEnv(),
      timeoutMs: WAIT_MS,
    });
    return JSON.parse(run.stdout) as { state: string; result: Record<string, unknown> };
  };
  const createKey = async (name: string, scopes: string, slackUser?: string) => {
    const run = await runCli(
      ['keys', 'create', '--name', name, '--scopes', scopes, ...(slackUser ? ['--slack-user', slackUser] : [])],
      { env: cliEnv() },
    );
    expect(run.code).toBe(0);
    secrets[name] = /secret: (\S+)/.exec(run.stdout)?.[1] ?? '';
  };

  beforeAll(async () => {
    callbacks = await startReceiver();
    runtime = await startTestRuntime({ dialect, env: { CALLER_KEY_CACHE_SECONDS: '1' } });
    await createKey('owner', 'order,cancel,read');
    await createKey('reader', 'order,read', 'U123');
    await createKey('canceller', 'order,cancel,read', 'U456');
  });
  afterAll(async () => {
    await runtime?.close();
    await callbacks?.close();
  });

  it('lists the Slack user on the key', async () => {
    const res = await runCli(['keys', 'list'], { env: cliEnv() });
    expect(res.code).toBe(0);
    // The SSH KEY column (issue 37 §2) follows: none of these keys has one.
    expect(res.stdout).toMatch(/SLACK USER\s+SSH KEY\n/);
    expect(res.stdout).toMatch(/^reader\s+active\s+order,read\s.*\sU123\s+-$/m);
    expect(res.stdout).toMatch(/^owner\s+active\s.*\s-\s+-$/m);
  });

  it('answers `key reader may not cancel` to the mapped user of a key without the scope', async () => {
    const answer = await slash('U123', 'cancel 1');
    expect(answer).toEqual({ response_type: 'ephemeral', text: 'key reader may not cancel' });
  });

  it("refuses a mapped user's cancel of another key's order like a webhook caller's, and the order stays", async () => {
    // Prepare: `owner` places an order through the webhook
    const placed = await signedPost(
      runtime.url,
      '/webhook/create-order',
      { gpu_type: 'RTX 4090', callback_url: `${callbacks.url}/owner` },
      secrets.owner,
      { 'x-webhook-key-id': 'owner' },
    );
    expect(placed.status).toBe(202);
    const result = (
      await callbacks.waitFor((r) => r.path === '/owner' && (r.json as { event?: string }).event === undefined, WAIT_MS)
    ).json as { order_id: number };
    // Act: the Slack user mapped to `canceller` tries to cancel it
    const answer = await slash('U456', `cancel ${result.order_id}`);
    // Assess
    expect(answer.response_type).toBe('in_channel');
    const taskId = /Task ID: (\S+)/.exec(answer.text)?.[1] ?? '';
    expect((await finalRecord(taskId)).result).toEqual({
      success: false,
      error: `order ${result.order_id} is not an order of key canceller`,
    });
    expect(
      runtime.simulator?.control
        .orders()
        .some(
          (o) =>
            (o as { order_id: number }).order_id === result.order_id && (o as { status?: string }).status !== 'expired',
        ),
    ).toBe(true);
  });

  it('lets an unmapped user act as the default key (SLACK_UNMAPPED_USERS=default)', async () => {
    const answer = await slash('U999', 'status');
    expect(answer.response_type).toBe('in_channel');
    const taskId = /Task ID: (\S+)/.exec(answer.text)?.[1] ?? '';
    expect((await finalRecord(taskId)).result).toMatchObject({ total_orders: expect.any(Number) });
  });
});
