/**
 * Log hygiene over a full local run (issue 6). Everything the relay writes while it serves every
 * kind of task, a bad webhook signature, Slack (good and bad signature), marketplace failures and a
 * poison queue message is captured, and:
 *  - no line contains the webhook secret, the marketplace API key, the Slack signing secret, a chat
 *    webhook URL or its token, a Slack response_url token, or any signature this test sent;
 *  - task work is correlated: its lines carry the right `task_id`, and lines of other work (a
 *    refused request, a poison message) carry none, although the local runtime runs every function
 *    concurrently in one process with one shared logger;
 *  - every line names the function that wrote it (issue 40 §4), and a refused request is WARN
 *    without a stack, while ERROR lines are the run's faults.
 *
 * Where the lines go: Powertools Logger (POWERTOOLS_DEV unset) prints through its own
 * `new Console({ stdout: process.stdout, stderr: process.stderr })`, so its JSON lines are caught at
 * `process.stdout.write` / `process.stderr.write` (errors and warnings on stderr). The local
 * runtime's `[local]`/`[api]` lines (quiet: false here) use the global `console`, which jest
 * replaces, so its methods are captured too. The last test proves the capture and the scan catch a
 * secret written through the very logger instance the handlers use.
 */
import { createHmac } from 'node:crypto';
import { SendMessageCommand, SQSClient } from '@aws-sdk/client-sqs';
import { startLocalRuntime } from '../../local/runtime';
import type { LocalRuntime } from '../../local/runtime';
import { hmacHex } from '../../lambdas/domain/signing';
import { FAST_ENV, FAST_SIMULATOR } from '../helpers/local-runtime';
import { request, signedPost, startReceiver } from '../helpers/receivers';
import { leaks, relayLines, startCapture, type LogLine } from '../helpers/log-capture';
import type { HttpAnswer, ReceivedRequest, Receiver } from '../helpers/receivers';

// Distinctive values: any of them in a log line is a leak, never a coincidence.
const WEBHOOK_SECRET = 'whsec-LOGHYG-5d8e2b91c7';
const MARKETPLACE_API_KEY = 'mkey-LOGHYG-3a9f71e044';
const SLACK_SIGNING_SECRET = 'slsig-LOGHYG-c4e0d6a13f';
/** The key of the relay's own root passwords (issue 38 §4). */
const SSH_PASSWORD_SECRET = 'sshpw-LOGHYG-8b1d4f60e2';
/** Standard Webhooks key of the deliveries; its base64 body is what must never be logged. */
const CALLBACK_KEY = Buffer.from('LOGHYG-callback-signing-key-0042').toString('base64');
const CALLBACK_SIGNING_SECRET = `whsec_${CALLBACK_KEY}`;
const SLACK_TOKEN = 'slackTokLOGHYG9f2e';
const SLACK_TOKEN_PATH = `/services/T0LOGHYG/B0LOGHYG/${SLACK_TOKEN}`;
const DISCORD_TOKEN = 'discordTokLOGHYG7c1a';
const DISCORD_TOKEN_PATH = `/api/webhooks/4242/${DISCORD_TOKEN}`;
const RESPONSE_URL_TOKEN = 'respTokLOGHYG2b8d';

/** Far fewer than a run writes (about 35 relay lines); enough that a broken capture cannot pass. */
const MIN_RELAY_LINES = 25;

describe('Log hygiene: a full local run', () => {
  let runtime: LocalRuntime;
  let callbacks: Receiver;
  let slack: Receiver;
  let discord: Receiver;
  let capture: ReturnType<typeof startCapture>;
  /** Every X-Webhook-Signature and X-Slack-Signature value this test sent, valid or not. */
  const signaturesSent: string[] = [];
  /** Task ids by what the test did. */
  const tasks: Record<string, string> = {};

  const signed = (path: string, body: unknown, secret = WEBHOOK_SECRET): Promise<HttpAnswer> => {
    signaturesSent.push(hmacHex(secret, typeof body === 'string' ? body : JSON.stringify(body)));
    return signedPost(runtime.url, path, body, secret);
  };
  const slashCommand = (form: Record<string, string>, secret = SLACK_SIGNING_SECRET): Promise<HttpAnswer> => {
    const body = new URLSearchParams(form).toString();
    const timestamp = String(Math.floor(Date.now() / 1000));
    const hex = createHmac('sha256', secret).update(`v0:${timestamp}:${body}`).digest('hex');
    signaturesSent.push(hex);
    return request(`${runtime.url}/slack/command`, {
      method: 'POST',
      headers: {
        'content-type': 'application/x-www-form-urlencoded',
        'x-slack-request-timestamp': timestamp,
        'x-slack-signature': `v0=${hex}`,
      },
      body,
    });
  };
  const callbackAt = (tag: string, match: (r: ReceivedRequest) => boolean = () => true): Promise<ReceivedRequest> =>
    callbacks.waitFor((r) => r.path === `/cb/${tag}` && match(r), 30_000);
  /** Resolves once a captured relay line matches; rejects naming the wait after `timeoutMs`. */
  const lineLogged = async (what: string, match: (line: LogLine) => boolean, timeoutMs = 20_000): Promise<void> => {
    const deadline = Date.now() + timeoutMs;
    while (!relayLines(capture.lines).some(match)) {
      if (Date.now() > deadline) throw new Error(`no log line ${what} within ${timeoutMs} ms`);
      await new Promise((resolve) => setTimeout(resolve, 50));
    }
  };
  const withMessage = (message: string) => relayLines(capture.lines).filter((line) => line.message === message);

  beforeAll(async () => {
    [callbacks, slack, discord] = await Promise.all([startReceiver(), startReceiver(), startReceiver()]);
    // From before start-up: banners and cold-start lines count too.
    capture = startCapture();
    // startTestRuntime's settings, but not quiet: the runtime's own access log is scanned as well.
    runtime = await startLocalRuntime({
      port: 0,
      quiet: false,
      env: {
        ...FAST_ENV,
        WEBHOOK_SECRET,
        MARKETPLACE_API_KEY, // the simulator is started with this key (local/runtime.ts)
        SLACK_SIGNING_SECRET,
        CALLBACK_SIGNING_SECRET,
        SSH_PASSWORD_SECRET,
        SLACK_WEBHOOK_URL: `${slack.url}${SLACK_TOKEN_PATH}`,
        DISCORD_WEBHOOK_URL: `${discord.url}${DISCORD_TOKEN_PATH}`,
        POWERTOOLS_LOG_LEVEL: 'DEBUG',
        // Must stay without effect: the API chain pins logEvent off (events hold signatures and URLs).
        POWERTOOLS_LOGGER_LOG_EVENT: 'true',
      },
      simulator: { ...FAST_SIMULATOR },
    });
  });
  afterAll(async () => {
    try {
      await runtime?.close();
      await Promise.all([callbacks, slack, discord].map((r) => r?.close()));
    } finally {
      capture?.stop();
    }
  });

  it('serves every task kind, refused signatures, Slack and marketplace failures', async () => {
    // Marketplace failure at the API, first: no cached listing can answer instead.
    runtime.simulator?.control.inject({ endpoint: 'marketplace', kind: 'code', code: 3, times: 5 });
    const summary = await request(`${runtime.url}/webhook/marketplace`);
    runtime.simulator?.control.clearFaults();
    expect(summary.status).toBe(500);

    // create-order → ready order, callback and both chat webhooks
    const created = await signed('/webhook/create-order', {
      gpu_type: 'RTX 4090',
      callback_url: `${callbacks.url}/cb/create`,
    });
    expect(created.status).toBe(202);
    tasks.create = String(created.json?.task_id);
    const order = (await callbackAt('create')).json as { success: boolean; order_id: number };
    expect(order.success).toBe(true);
    await slack.waitFor((r) => String((r.json as { text?: string })?.text).includes(String(order.order_id)));
    await discord.waitFor((r) => String((r.json as { content?: string })?.content).includes(String(order.order_id)));

    const status = await signed('/webhook/status', { callback_url: `${callbacks.url}/cb/status` });
    tasks.status = String(status.json?.task_id);
    await callbackAt('status');

    // Marketplace failure in the worker: one HTTP 500, retried, then the cancel succeeds.
    runtime.simulator?.control.inject({ endpoint: 'cancel_order', kind: 'http500', times: 1 });
    const cancel = await signed('/webhook/cancel-order', {
      order_id: order.order_id,
      callback_url: `${callbacks.url}/cb/cancel`,
    });
    tasks.cancel = String(cancel.json?.task_id);
    expect((await callbackAt('cancel')).json).toMatchObject({ success: true, status: 'cancelled' });

    const miss = await signed('/webhook/price-alert', {
      gpu_type: 'RTX 4090',
      target_price: 0.0001,
      callback_url: `${callbacks.url}/cb/alert-miss`,
    });
    tasks.alertMiss = String(miss.json?.task_id);
    await callbackAt('alert-miss');

    // A match: the worker starts a create-order workflow of its own.
    const hit = await signed('/webhook/price-alert', {
      gpu_type: 'RTX 3090',
      target_price: 1000,
      callback_url: `${callbacks.url}/cb/alert-hit`,
    });
    tasks.alertHit = String(hit.json?.task_id);
    const alert = await callbackAt('alert-hit', (r) => typeof (r.json as { task_id?: unknown })?.task_id === 'string');
    tasks.alertOrder = String((alert.json as { task_id: string }).task_id);
    await callbackAt('alert-hit', (r) => (r.json as { order_id?: unknown })?.order_id !== undefined);

    expect((await signed('/webhook/create-order', { gpu_type: 'RTX 4090' }, 'not-the-webhook-secret')).status).toBe(
      401,
    );

    const slash = await slashCommand({
      command: '/gpu',
      text: 'status',
      response_url: `${callbacks.url}/cb/slack-response/${RESPONSE_URL_TOKEN}`,
    });
    expect(slash.json?.response_type).toBe('in_channel');
    tasks.slackStatus = String(/Task ID: (\S+)/.exec(String(slash.json?.text))?.[1]);
    await callbacks.waitFor((r) => r.path.endsWith(`/${RESPONSE_URL_TOKEN}`), 30_000);
    expect((await slashCommand({ command: '/gpu', text: 'status' }, 'not-the-slack-secret')).status).toBe(401);

    // A poison message, straight onto the queue after the worker finished the Slack job.
    await lineLogged(
      'for the Slack status job',
      (line) => line.message === 'job finished' && line.task_id === tasks.slackStatus,
    );
    const sqs = new SQSClient({
      endpoint: runtime.sqs.endpoint,
      region: 'us-east-1',
      credentials: { accessKeyId: 'local', secretAccessKey: 'local' },
    });
    try {
      await sqs.send(
        new SendMessageCommand({
          QueueUrl: runtime.sqs.queueUrl,
          MessageBody: JSON.stringify({ kind: 'status', note: 'no task id' }),
        }),
      );
    } finally {
      sqs.destroy();
    }
    await lineLogged('for the poison message', (line) => line.message === 'poison job message');
  });

  it('captured the relay logs of the run (the capture works)', () => {
    const lines = relayLines(capture.lines);
    expect(lines.length).toBeGreaterThanOrEqual(MIN_RELAY_LINES);
    // Both streams (Powertools writes WARN/ERROR to stderr) and the runtime's console access log.
    expect(capture.lines.some((l) => l.source === 'stdout' && l.text.includes('"task accepted"'))).toBe(true);
    expect(capture.lines.some((l) => l.source === 'stderr' && l.text.includes('"poison job message"'))).toBe(true);
    expect(capture.lines.some((l) => l.source === 'console' && l.text.includes('POST /webhook/create-order 202'))).toBe(
      true,
    );
    // The known, non-secret values of the run are there: every accepted task id.
    const logged = capture.lines.map((l) => l.text).join('\n');
    for (const id of Object.values(tasks)) expect(logged).toContain(id);
    // The event-logging switch stayed without effect.
    expect(lines.some((line) => line.message === 'Lambda invocation event')).toBe(false);
  });

  it('logs no secret, chat URL, response_url token or signature', () => {
    // Prepare
    const forbidden: Record<string, string> = {
      'webhook secret': WEBHOOK_SECRET,
      'marketplace API key': MARKETPLACE_API_KEY,
      'Slack signing secret': SLACK_SIGNING_SECRET,
      'callback signing key': CALLBACK_KEY,
      'ssh password secret': SSH_PASSWORD_SECRET,
      // The root password each order was sent (the relay's own: these tasks give none).
      ...Object.fromEntries(
        (runtime.simulator?.control.orders() ?? [])
          .map((o) => runtime.simulator?.control.orderRequest(o.order_id)?.ssh_password)
          .filter((pw): pw is string => typeof pw === 'string')
          .map((pw, i) => [`root password #${i + 1}`, pw]),
      ),
      ...Object.fromEntries(
        callbacks.requests.map((r, i) => [
          `delivery signature #${i + 1}`,
          String(r.headers['webhook-signature']).split(' ')[0]?.slice(3) ?? 'none',
        ]),
      ),
      'Slack webhook URL': `${slack.url}${SLACK_TOKEN_PATH}`,
      'Slack webhook token path': SLACK_TOKEN_PATH,
      'Slack webhook token': SLACK_TOKEN,
      'Discord webhook URL': `${discord.url}${DISCORD_TOKEN_PATH}`,
      'Discord webhook token path': DISCORD_TOKEN_PATH,
      'Discord webhook token': DISCORD_TOKEN,
      'Slack response_url token': RESPONSE_URL_TOKEN,
      ...Object.fromEntries(signaturesSent.map((signature, i) => [`signature #${i + 1}`, signature])),
    };
    // Six webhook signatures (one invalid) and two Slack ones (one invalid).
    expect(signaturesSent).toHaveLength(8);
    // Act
    const found = leaks(capture.lines, forbidden);
    // Assess
    expect(found).toEqual([]);
  });

  it('tags task work with its own task_id across the API, the workflow and the worker', () => {
    const lines = relayLines(capture.lines);
    const idsOf = (message: string) => withMessage(message).map((line) => line.task_id);
    // API: each accepted task
    expect(idsOf('task accepted')).toEqual(
      expect.arrayContaining([
        tasks.create,
        tasks.status,
        tasks.cancel,
        tasks.alertMiss,
        tasks.alertHit,
        tasks.slackStatus,
      ]),
    );
    // Workflow: both create-order executions, in every task that logs
    for (const message of ['server chosen', 'order placed', 'task finished']) {
      expect(idsOf(message)).toEqual(expect.arrayContaining([tasks.create, tasks.alertOrder]));
    }
    // Worker: every job, and the retried attempt
    expect(idsOf('job finished')).toEqual(
      expect.arrayContaining([tasks.status, tasks.cancel, tasks.alertMiss, tasks.alertHit, tasks.slackStatus]),
    );
    expect(idsOf('job attempt failed; will retry')).toContain(tasks.cancel);
    // Every line of task work carries an id, and only ids of this run's tasks appear anywhere.
    const taskWork = [
      'task accepted',
      'server chosen',
      'order placed',
      'task finished',
      'job finished',
      'job attempt failed; will retry',
    ];
    expect(lines.filter((line) => taskWork.includes(String(line.message)) && typeof line.task_id !== 'string')).toEqual(
      [],
    );
    const known = new Set(Object.values(tasks));
    expect(lines.filter((line) => line.task_id !== undefined && !known.has(String(line.task_id)))).toEqual([]);
  });

  it('tags no task on lines of other work, whatever ran before them in the process', () => {
    // Each ran right after task work in the same process (and logger): none may inherit its id.
    for (const message of [
      'signature rejected',
      'Slack signature rejected',
      'marketplace listing failed',
      'poison job message',
    ]) {
      const lines = withMessage(message);
      expect(lines.length).toBeGreaterThan(0);
      expect(lines.map((line) => line.task_id)).toEqual(lines.map(() => undefined));
    }
  });

  it('names every line after the function that wrote it, although they all ran in one process (issue 40 §4)', () => {
    const namesOf = (message: string) => [...new Set(withMessage(message).map((line) => line.function_name))].sort();
    expect(namesOf('task accepted')).toEqual([
      'local-CancelOrder',
      'local-CreateOrder',
      'local-PriceAlert',
      'local-SlackCommand',
      'local-Status',
    ]);
    expect(namesOf('server chosen')).toEqual(['local-find-server']);
    expect(namesOf('order placed')).toEqual(['local-place-order']);
    expect(namesOf('task finished')).toEqual(['local-report-result']);
    expect(namesOf('job finished')).toEqual(['local-job-worker']);
    expect(namesOf('poison job message')).toEqual(['local-job-worker']);
    expect(namesOf('marketplace listing failed')).toEqual(['local-MarketplaceSummary']);
  });

  it('logs refused requests at WARN without a stack; ERROR lines are faults (issue 40 §4)', () => {
    // The two bad signatures (webhook, Slack): the caller's mistake, one WARN line each.
    const refused = withMessage('request refused');
    expect(refused.map((line) => [line.level, line.statusCode, line.error]).sort()).toEqual([
      ['WARN', 401, 'Invalid Slack signature'],
      ['WARN', 401, 'Invalid signature'],
    ]);
    expect(refused.filter((line) => JSON.stringify(line).includes('"stack"'))).toEqual([]);
    // The marketplace's failure (its answer, 500, is the fault's second line) and the poison message
    // are the run's only faults.
    expect(withMessage('request failed').map((line) => [line.level, line.statusCode])).toEqual([['WARN', 500]]);
    const errors = relayLines(capture.lines).filter((line) => line.level === 'ERROR');
    expect([...new Set(errors.map((line) => line.message))].sort()).toEqual([
      'marketplace listing failed',
      'poison job message',
    ]);
  });

  it('traces nothing locally: no X-Ray message was printed', async () => {
    // Assess: no X-Ray SDK in the functions (Lambda active tracing only), so no "context missing" / "segment" complaints
    expect(capture.lines.filter((line) => /x-ray|segment/i.test(line.text))).toEqual([]);
  });

  it('would catch a secret written through the relay logger (the scan can fail)', async () => {
    // Prepare: the logger instance the handlers loaded (same module registry as this file)
    const { logger } = await import('../../lambdas/adapters/observability');
    const from = capture.lines.length;
    // Act
    logger.warn('canary', { leaked: `${slack.url}${SLACK_TOKEN_PATH}`, key: MARKETPLACE_API_KEY });
    const written = capture.lines.splice(from); // keep the run's capture clean
    // Assess
    expect(logger.getLevelName()).toBe('DEBUG');
    expect(
      leaks(written, { 'Slack webhook token': SLACK_TOKEN, 'marketplace API key': MARKETPLACE_API_KEY }),
    ).toHaveLength(2);
  });
});
