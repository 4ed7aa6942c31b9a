import { createHmac } from 'node:crypto';
import type { APIGatewayProxyEventV2 } from 'aws-lambda';
import {
  createSlackCommandHandler,
  SLACK_TEAM_REFUSED_MESSAGE,
  SLACK_TRIGGER_ID_TTL_SECONDS,
  SLACK_USER_REFUSED_MESSAGE,
} from '../../../../lambdas/handlers/api/slack-command';
import type { CallerKeyRecord } from '../../../../lambdas/domain/teams/caller-keys';
import { SLACK_UNMAPPED_REFUSED_MESSAGE } from '../../../../lambdas/domain/teams/slack-callers';
import { UNSIGNED_SLACK_REFUSED_MESSAGE } from '../../../../lambdas/middleware/slack-signature';
import { apiEvent, lambdaContext } from '../../../fixtures/events/api-event';
import slackFixture from '../../../fixtures/events/slack-command.json';
import { acceptFakes } from '../../../fakes/deps';
import { parseResult } from '../../../helpers/parse-result';

const PATH = '/slack/command';
const form = (fields: Record<string, string>) => new URLSearchParams(fields).toString();
// Slack posts application/x-www-form-urlencoded, which API Gateway delivers base64-encoded.
const slackEvent = (fields: Record<string, string>, headers: Record<string, string> = {}) =>
  apiEvent({
    path: PATH,
    body: form({ command: '/gpu', ...fields }),
    base64: true,
    headers: { 'content-type': 'application/x-www-form-urlencoded', ...headers },
  });

const setup = (env: Record<string, string> = {}, keys: readonly CallerKeyRecord[] = []) => {
  const { fakes, deps } = acceptFakes(env);
  const handler = createSlackCommandHandler(() => ({ ...deps, callerKeyRecords: async () => keys }));
  return { fakes, call: async (event: APIGatewayProxyEventV2) => parseResult(await handler(event, lambdaContext())) };
};

describe('Handler: slack-command', () => {
  it('queues a create-order for the fixture event (base64 form) and answers in_channel with the task id', async () => {
    // Prepare
    const { fakes, call } = setup();
    // Act
    const result = await call(structuredClone(slackFixture) as APIGatewayProxyEventV2);
    // Assess
    expect(result.statusCode).toBe(200);
    // `_` stands for a space: `rent RTX_4090 0.5` searches "RTX 4090".
    expect(result.body).toEqual({
      response_type: 'in_channel',
      text: 'Renting RTX 4090 (max $0.5/hr): queued. Task ID: 00000000-0000-4000-8000-000000000001',
    });
    expect(fakes.workflow.started[0].input).toMatchObject({
      request: { gpu_type: 'RTX 4090', max_price: 0.5, use_spot: true },
      origin: { source: 'slack' },
    });
    // response_url may carry a token: the task record holds it, the workflow input (execution history) does not.
    expect(JSON.stringify(fakes.workflow.started[0].input)).not.toContain('hooks.slack.com');
    const taskId = fakes.workflow.started[0].taskId;
    expect(fakes.tasks.records.get(taskId)?.origin).toEqual({
      source: 'slack',
      responseUrl: 'https://hooks.slack.com/commands/1234/5678',
    });
    expect(fakes.tasks.records.get('00000000-0000-4000-8000-000000000001')?.origin).toEqual({
      source: 'slack',
      responseUrl: 'https://hooks.slack.com/commands/1234/5678',
    });
  });

  it('queues a standing create-order with its outbid policy for `rent RTX_4090 0.5 wait=2h rebid` (issue 23)', async () => {
    // Prepare
    const { fakes, call } = setup();
    // Act
    const result = await call(slackEvent({ text: 'rent RTX_4090 0.5 wait=2h rebid' }));
    // Assess
    expect(result.body).toEqual({
      response_type: 'in_channel',
      text: 'Renting RTX 4090 (max $0.5/hr, waiting up to 2h, if outbid: rebid): queued. Task ID: 00000000-0000-4000-8000-000000000001',
    });
    expect(fakes.workflow.started[0].input).toMatchObject({
      request: { gpu_type: 'RTX 4090', max_price: 0.5, use_spot: true, wait_seconds: 7200, on_outbid: 'rebid' },
    });
  });

  it('answers a clear ephemeral error and queues nothing for `rent A100 wait=3d`', async () => {
    const { fakes, call } = setup();
    const result = await call(slackEvent({ text: 'rent A100 wait=3d' }));
    expect(result.body.response_type).toBe('ephemeral');
    expect(result.body.text).toMatch(
      /^`wait=3d`: wait= takes a number with a unit, s, m or h \(e\.g\. 45s, 90m, 2h\), at most 24h\./,
    );
    expect(fakes.workflow.started).toEqual([]);
    expect(fakes.queue.sent).toEqual([]);
  });

  it('queues a cancel job', async () => {
    const { fakes, call } = setup();
    const result = await call(slackEvent({ text: 'CANCEL 77' }));
    expect(result.body).toEqual({
      response_type: 'in_channel',
      text: 'Cancelling order 77: queued. Task ID: 00000000-0000-4000-8000-000000000001',
    });
    expect(fakes.queue.sent).toEqual([
      {
        task_id: '00000000-0000-4000-8000-000000000001',
        kind: 'cancel-order',
        input: { order_id: 77 },
        origin: { source: 'slack' },
      },
    ]);
  });

  it('queues an extend-order job for `extend <order_id> <hours>`', async () => {
    const { fakes, call } = setup();
    const result = await call(slackEvent({ text: 'extend 77 1.5' }));
    expect(result.body).toEqual({
      response_type: 'in_channel',
      text: 'Extending order 77 by 1.5 h: queued. Task ID: 00000000-0000-4000-8000-000000000001',
    });
    expect(fakes.queue.sent).toEqual([
      {
        task_id: '00000000-0000-4000-8000-000000000001',
        kind: 'extend-order',
        input: { order_id: 77, hours: 1.5 },
        origin: { source: 'slack' },
      },
    ]);
  });

  it('queues a set-spot-price job for `bid <order_id> <price>`', async () => {
    const { fakes, call } = setup();
    const result = await call(slackEvent({ text: 'bid 77 12.5' }));
    expect(result.body).toEqual({
      response_type: 'in_channel',
      text: 'Setting the spot price of order 77 to 12.5: queued. Task ID: 00000000-0000-4000-8000-000000000001',
    });
    expect(fakes.queue.sent).toEqual([
      {
        task_id: '00000000-0000-4000-8000-000000000001',
        kind: 'set-spot-price',
        input: { order_id: 77, desired_price: 12.5 },
        origin: { source: 'slack' },
      },
    ]);
  });

  it('answers ephemeral usage and queues nothing for `extend 77 0`', async () => {
    const { fakes, call } = setup();
    const result = await call(slackEvent({ text: 'extend 77 0' }));
    expect(result.body.response_type).toBe('ephemeral');
    expect(fakes.queue.sent).toEqual([]);
  });

  it('queues a status job', async () => {
    const { fakes, call } = setup();
    const result = await call(slackEvent({ text: 'Status' }));
    expect(result.body.response_type).toBe('in_channel');
    expect(fakes.queue.sent[0]).toMatchObject({ kind: 'status', input: {} });
  });

  it.each([[''], ['rent'], ['rent A100 cheap'], ['cancel'], ['cancel twelve']])(
    'answers ephemeral usage and queues nothing for %j',
    async (text) => {
      const { fakes, call } = setup();
      const result = await call(slackEvent({ text }));
      expect(result.statusCode).toBe(200);
      expect(result.body.response_type).toBe('ephemeral');
      expect(result.body.text).toMatch(/Usage/);
      expect(fakes.tasks.records.size).toBe(0);
      expect(fakes.queue.sent).toEqual([]);
      expect(fakes.workflow.started).toEqual([]);
    },
  );

  it('answers ephemeral usage for a body without a text field', async () => {
    const { call } = setup();
    const result = await call(apiEvent({ path: PATH, body: '', base64: true }));
    expect(result.body).toMatchObject({ response_type: 'ephemeral', text: expect.stringMatching(/^Usage:/) });
  });

  it('names an unknown subcommand', async () => {
    const { fakes, call } = setup();
    const result = await call(slackEvent({ text: 'destroy everything' }));
    expect(result.body.response_type).toBe('ephemeral');
    expect(result.body.text).toMatch(/^Unknown command `destroy`/);
    expect(fakes.tasks.records.size).toBe(0);
  });

  it('does not require the webhook signature', async () => {
    const { call } = setup();
    expect((await call(slackEvent({ text: 'status' }))).statusCode).toBe(200);
  });

  it('drops a response_url on a private address unless private callbacks are allowed', async () => {
    const { fakes, call } = setup();
    await call(slackEvent({ text: 'status', response_url: 'http://169.254.169.254/latest/meta-data' }));
    expect(fakes.queue.sent[0].origin).toEqual({ source: 'slack' });
    const local = setup({ ALLOW_PRIVATE_CALLBACKS: 'true' });
    await local.call(slackEvent({ text: 'status', response_url: 'http://127.0.0.1:9/r' }));
    expect(local.fakes.queue.sent[0].origin).toEqual({ source: 'slack', responseUrl: 'http://127.0.0.1:9/r' });
  });

  it('queues once when the same trigger_id arrives again within the signature window (a replay)', async () => {
    const { fakes, call } = setup();
    const first = await call(slackEvent({ text: 'status', trigger_id: '123.456.abc' }));
    fakes.clock += (SLACK_TRIGGER_ID_TTL_SECONDS - 1) * 1000;
    const replay = await call(slackEvent({ text: 'status', trigger_id: '123.456.abc' }));
    expect(replay.body.text).toBe(first.body.text);
    expect(fakes.queue.sent).toHaveLength(1);
  });

  it('queues a reused trigger_id again once the signature window has passed (not 24 h later)', async () => {
    // Slack never retries slash commands; a client reusing the value must not lose its commands for a day.
    const { fakes, call } = setup();
    expect(SLACK_TRIGGER_ID_TTL_SECONDS).toBe(300);
    const first = await call(slackEvent({ text: 'status', trigger_id: '123.456.abc' }));
    fakes.clock += SLACK_TRIGGER_ID_TTL_SECONDS * 1000;
    const later = await call(slackEvent({ text: 'status', trigger_id: '123.456.abc' }));
    expect(later.body.response_type).toBe('in_channel');
    expect(later.body.text).not.toBe(first.body.text);
    expect(fakes.queue.sent.map((m) => m.task_id)).toEqual([
      '00000000-0000-4000-8000-000000000001',
      '00000000-0000-4000-8000-000000000002',
    ]);
  });

  describe('without a Slack signing secret', () => {
    it.each([['rent A100'], ['cancel 42'], ['status'], ['']])(
      'refuses %j with 403 and queues nothing unless ALLOW_UNSIGNED_SLACK',
      async (text) => {
        const { fakes, call } = setup({ ALLOW_UNSIGNED_SLACK: 'false' });
        const result = await call(slackEvent({ text, trigger_id: '1.2.3' }));
        expect(result).toMatchObject({ statusCode: 403, body: { error: UNSIGNED_SLACK_REFUSED_MESSAGE } });
        expect(fakes.tasks.records.size).toBe(0);
        expect(fakes.workflow.started).toEqual([]);
        expect(fakes.queue.sent).toEqual([]);
        expect(fakes.idempotency.keys.size).toBe(0);
      },
    );

    it('lets commands through unverified when ALLOW_UNSIGNED_SLACK is true (the spec, `npm start`)', async () => {
      const { fakes, call } = setup({ ALLOW_UNSIGNED_SLACK: 'true' });
      const result = await call(slackEvent({ text: 'status' }));
      expect(result.body.response_type).toBe('in_channel');
      expect(fakes.queue.sent).toHaveLength(1);
    });

    it('still verifies a configured secret when ALLOW_UNSIGNED_SLACK is true', async () => {
      const { fakes, call } = setup({ ALLOW_UNSIGNED_SLACK: 'true' });
      fakes.slackSecret = 'configured';
      const result = await call(slackEvent({ text: 'status' }));
      expect(result.statusCode).toBe(401);
      expect(fakes.queue.sent).toEqual([]);
    });
  });

  it('answers an ephemeral retry message when the hand-off fails, leaving nothing queued', async () => {
    const { fakes, call } = setup();
    fakes.queue.fail = new Error('SQS down');
    const result = await call(slackEvent({ text: 'status' }));
    expect(result).toMatchObject({
      statusCode: 200,
      body: { response_type: 'ephemeral', text: 'Could not queue the task; nothing was started. Retry later.' },
    });
    expect(fakes.tasks.records.size).toBe(0);
  });

  describe('with a Slack signing secret', () => {
    const SLACK_SECRET = 'slack-signing-secret';
    const NOW_S = 1_700_000_000;
    const slackHeaders = (body: string, ts = String(NOW_S), secret = SLACK_SECRET) => ({
      'x-slack-request-timestamp': ts,
      'x-slack-signature': `v0=${createHmac('sha256', secret).update(`v0:${ts}:${body}`).digest('hex')}`,
    });

    it('accepts a correctly signed command', async () => {
      const { fakes, call } = setup();
      fakes.slackSecret = SLACK_SECRET;
      const body = form({ command: '/gpu', text: 'status' });
      const result = await call(apiEvent({ path: PATH, body, base64: true, headers: slackHeaders(body) }));
      expect(result.body.response_type).toBe('in_channel');
    });

    it.each([
      ['forged', (body: string) => slackHeaders(body, String(NOW_S), 'guess')],
      ['stale', (body: string) => slackHeaders(body, String(NOW_S - 301))],
      ['unsigned', () => ({})],
    ])('returns 401 for a %s command and queues nothing', async (_name, headers) => {
      const { fakes, call } = setup();
      fakes.slackSecret = SLACK_SECRET;
      const body = form({ command: '/gpu', text: 'status' });
      const result = await call(apiEvent({ path: PATH, body, base64: true, headers: headers(body) }));
      expect(result).toMatchObject({ statusCode: 401, body: { error: 'Invalid Slack signature' } });
      expect(fakes.queue.sent).toEqual([]);
    });
  });
  describe('team and user allowlists (SLACK_ALLOWED_TEAM_IDS, SLACK_ALLOWED_USER_IDS)', () => {
    const nothingQueued = (fakes: ReturnType<typeof setup>['fakes']) => {
      expect(fakes.tasks.records.size).toBe(0);
      expect(fakes.queue.sent).toEqual([]);
      expect(fakes.workflow.started).toEqual([]);
      expect(fakes.idempotency.keys.size).toBe(0);
    };

    it.each([
      ['another team', { team_id: 'T0OTHER', user_id: 'U0ALICE' }],
      ['no team_id', { user_id: 'U0ALICE' }],
      ['an empty team_id', { team_id: '', user_id: 'U0ALICE' }],
      ['a team id differing in case', { team_id: 't0ours', user_id: 'U0ALICE' }],
    ])('refuses a command from %s ephemerally and queues nothing', async (_name, ids) => {
      const { fakes, call } = setup({ SLACK_ALLOWED_TEAM_IDS: 'T0OURS, T0PARTNER' });
      const result = await call(slackEvent({ text: 'rent RTX_4090 0.5', trigger_id: 't1', ...ids }));
      expect(result).toEqual(
        expect.objectContaining({
          statusCode: 200,
          body: { response_type: 'ephemeral', text: SLACK_TEAM_REFUSED_MESSAGE },
        }),
      );
      nothingQueued(fakes);
    });

    it('refuses even usage and unknown words from another team (nothing about the relay is answered)', async () => {
      const { call } = setup({ SLACK_ALLOWED_TEAM_IDS: 'T0OURS' });
      for (const text of ['', 'help', 'frobnicate']) {
        expect((await call(slackEvent({ text, team_id: 'T0OTHER' }))).body).toEqual({
          response_type: 'ephemeral',
          text: SLACK_TEAM_REFUSED_MESSAGE,
        });
      }
    });

    it.each(['T0OURS', 'T0PARTNER'])('accepts a command from listed team %s', async (team) => {
      const { fakes, call } = setup({ SLACK_ALLOWED_TEAM_IDS: 'T0OURS,T0PARTNER' });
      const result = await call(slackEvent({ text: 'cancel 77', team_id: team, user_id: 'U0ANYONE' }));
      expect(result.body.response_type).toBe('in_channel');
      expect(fakes.queue.sent).toHaveLength(1);
    });

    it('with a user list too, refuses other users of an allowed team and accepts listed ones', async () => {
      const { fakes, call } = setup({ SLACK_ALLOWED_TEAM_IDS: 'T0OURS', SLACK_ALLOWED_USER_IDS: 'U0ALICE,U0BOB' });
      const stranger = await call(slackEvent({ text: 'status', team_id: 'T0OURS', user_id: 'U0MALLORY' }));
      const noUser = await call(slackEvent({ text: 'status', team_id: 'T0OURS' }));
      expect(stranger.body).toEqual({ response_type: 'ephemeral', text: SLACK_USER_REFUSED_MESSAGE });
      expect(noUser.body).toEqual({ response_type: 'ephemeral', text: SLACK_USER_REFUSED_MESSAGE });
      nothingQueued(fakes);
      // A listed user of another team is still refused by the team list.
      const otherTeam = await call(slackEvent({ text: 'status', team_id: 'T0OTHER', user_id: 'U0ALICE' }));
      expect(otherTeam.body).toEqual({ response_type: 'ephemeral', text: SLACK_TEAM_REFUSED_MESSAGE });
      const alice = await call(slackEvent({ text: 'status', team_id: 'T0OURS', user_id: 'U0ALICE' }));
      expect(alice.body.response_type).toBe('in_channel');
      expect(fakes.queue.sent).toHaveLength(1);
    });

    it("accepts every team and user when no list is set (the spec's behaviour)", async () => {
      const { fakes, call } = setup();
      const result = await call(slackEvent({ text: 'status', team_id: 'T0ANY', user_id: 'U0ANY' }));
      expect(result.body.response_type).toBe('in_channel');
      expect(fakes.queue.sent).toHaveLength(1);
    });

    it('checks the list after the Slack signature: a forged command from an allowed team is still 401', async () => {
      const { fakes, call } = setup({ SLACK_ALLOWED_TEAM_IDS: 'T0OURS' });
      fakes.slackSecret = 'slack-signing-secret';
      const body = form({ command: '/gpu', text: 'status', team_id: 'T0OURS' });
      const result = await call(
        apiEvent({
          path: PATH,
          body,
          base64: true,
          headers: { 'x-slack-request-timestamp': '1700000000', 'x-slack-signature': 'v0=00' },
        }),
      );
      expect(result.statusCode).toBe(401);
      nothingQueued(fakes);
    });

    it.each([['t0lower'], ['T0OURS;DROP'], [' , ']])(
      'refuses a malformed list %j at cold start (env parse)',
      (value) => {
        expect(() => setup({ SLACK_ALLOWED_TEAM_IDS: value })).toThrow(/SLACK_ALLOWED_TEAM_IDS/);
      },
    );
  });

  describe('Slack users mapped to caller keys (issue 24)', () => {
    const mapped: CallerKeyRecord = {
      name: 'ana',
      scopes: ['order', 'read'],
      secret: 'sealed',
      created_at: 1_600_000_000,
      slack_user: 'U123',
    };

    it('queues the command as the key that names the user (its caller travels with the task)', async () => {
      const { fakes, call } = setup({}, [mapped]);
      const result = await call(slackEvent({ text: 'rent A100', user_id: 'U123' }));
      expect(result.body.response_type).toBe('in_channel');
      expect(fakes.workflow.started[0].input).toMatchObject({
        origin: { source: 'slack', caller: { key: 'ana', sees_all: false } },
      });
    });

    it('answers `key <name> may not <scope>` and queues nothing when the key lacks the scope', async () => {
      const { fakes, call } = setup({}, [mapped]);
      const result = await call(slackEvent({ text: 'cancel 77', user_id: 'U123' }));
      expect(result.body).toEqual({ response_type: 'ephemeral', text: 'key ana may not cancel' });
      expect(fakes.queue.sent).toEqual([]);
    });

    it('lets an unmapped user act as the default key by default (SLACK_UNMAPPED_USERS=default)', async () => {
      const { fakes, call } = setup({}, [mapped]);
      const result = await call(slackEvent({ text: 'cancel 77', user_id: 'U999' }));
      expect(result.body.response_type).toBe('in_channel');
      expect(fakes.queue.sent[0]).toMatchObject({ kind: 'cancel-order', origin: { source: 'slack' } });
      expect(fakes.queue.sent[0].origin).not.toHaveProperty('caller');
    });

    it('refuses an unmapped user under SLACK_UNMAPPED_USERS=deny, before parsing, and queues nothing', async () => {
      const { fakes, call } = setup({ SLACK_UNMAPPED_USERS: 'deny' }, [mapped]);
      for (const text of ['status', 'help me']) {
        const result = await call(slackEvent({ text, user_id: 'U999' }));
        expect(result.body).toEqual({ response_type: 'ephemeral', text: SLACK_UNMAPPED_REFUSED_MESSAGE });
      }
      expect(fakes.queue.sent).toEqual([]);
    });
  });

  describe('per-address rate limit', () => {
    it('answers 429 Rate limit exceeded with Retry-After once the address has MAX_REQUESTS_PER_MINUTE commands, and queues nothing', async () => {
      const { fakes, call } = setup({ MAX_REQUESTS_PER_MINUTE: '2' });
      const statuses = [];
      for (let i = 0; i < 2; i += 1) statuses.push((await call(slackEvent({ text: 'status' }))).statusCode);
      const limited = await call(slackEvent({ text: 'status' }));
      expect(statuses).toEqual([200, 200]);
      expect(limited).toMatchObject({ statusCode: 429, body: { error: 'Rate limit exceeded' } });
      expect(Number(limited.headers?.['Retry-After'] ?? limited.headers?.['retry-after'])).toBeGreaterThan(0);
      expect(fakes.queue.sent).toHaveLength(2);
      expect(fakes.window.keysHit.every((key) => key.startsWith('RATE#'))).toBe(true);
    });
  });
});
