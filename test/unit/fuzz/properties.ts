/**
 * The fuzz properties, one per kind of route (lib/routes.ts). The test files only pick routes, so
 * jest can spread the routes over its workers.
 */
import fc from 'fast-check';
import type { SignatureMode } from './fuzz-kit';
import {
  lengthOf,
  sameAs,
  EXISTING_TASK_ID,
  LIMIT,
  NOW_S,
  SECRET,
  SLACK_SECRET,
  TARGETS,
  buildEvent,
  caseConfig,
  decodedOf,
  encode,
  encoding,
  expectExactlyOneHandOff,
  expectNothingHandedOff,
  expectSizeRule,
  extraHeaders,
  freshCase,
  idempotencyHeaderName,
  idempotencyKey,
  invoke,
  jsonBodies,
  routeOf,
  signatureHeaderName,
  signatureMode,
  signatureShouldPass,
  signatureValue,
  sourceIp,
  timestamp,
  timestampHeaderName,
  validBodyFor,
  type BodySpec,
} from './fuzz-kit';
import { createHmac } from 'node:crypto';
import { DEFAULT_SPEND_PAGE_DAYS, spendPage, spendRange } from '../../../lambdas/domain/teams/spend-ledger';

/** Answers per route and status in this process: the tests check every outcome was reached. */
export const outcomes: Record<string, Record<string, number>> = {};
const tally = (routeId: string, status: number | string): void => {
  const byStatus = (outcomes[routeId] ??= {});
  byStatus[String(status)] = (byStatus[String(status)] ?? 0) + 1;
};

/** Prints the tallies when FUZZ_REPORT is set (the figures in docs/reliability.md). */
export const reportOutcomes = (): void => {
  if (process.env.FUZZ_REPORT) process.stdout.write(`FUZZ_OUTCOMES ${JSON.stringify(outcomes)}\n`);
};

const webhookHeaders = fc.record({
  mode: signatureMode,
  sigName: signatureHeaderName,
  ts: timestamp,
  tsName: timestampHeaderName,
  key: idempotencyKey,
  keyName: idempotencyHeaderName,
  extra: extraHeaders,
  garbage: fc.oneof(
    fc.string({ unit: 'binary', maxLength: 80 }),
    fc.stringMatching(/^[0-9a-f]{64}$/),
    fc.stringMatching(/^[0-9a-fA-F]{1,63}$/),
  ),
  variant: fc.constantFrom<'upper' | 'padded'>('upper', 'padded'),
});

type WebhookHeaders = typeof webhookHeaders extends fc.Arbitrary<infer T> ? T : never;

/** The headers of a signed request whose signature covers `payload`. */
const signedHeaders = (
  h: WebhookHeaders,
  payload: Buffer,
): { headers: Record<string, string>; signature: string | undefined } => {
  const tsEffective = h.ts.value?.trim() || undefined;
  const signature = signatureValue(h.mode, payload, tsEffective, h.garbage, h.variant);
  const headers: Record<string, string> = { ...h.extra };
  if (signature !== undefined) headers[h.sigName] = signature;
  if (h.ts.value !== undefined) headers[h.tsName] = h.ts.value;
  if (h.key.value !== undefined) headers[h.keyName] = h.key.value;
  return { headers, signature };
};

/** Real signatures must never come back in an answer; garbage ones may be short enough to match by chance. */
const leakable = (mode: SignatureMode, signature: string | undefined): string[] =>
  signature && ['correct', 'previous', 'body-only', 'variant', 'wrong-secret'].includes(mode) ? [signature.trim()] : [];

/**
 * A signed JSON route (create-order, cancel-order, price-alert, status): never a 5xx; 413 over the
 * limit; 401 for any signature or timestamp that must fail; 202 for a correctly signed valid body
 * (400 if its Idempotency-Key is malformed); exactly one hand-off on 202 and none otherwise; every
 * request counted by the rate limiter.
 */
export const signedJsonRouteProperty = (routeId: string) => {
  const route = routeOf(routeId);
  const target = TARGETS[routeId];
  return fc.asyncProperty(
    caseConfig,
    jsonBodies(routeId),
    encoding,
    webhookHeaders,
    sourceIp,
    async (config, body: BodySpec, enc, h, ip) => {
      const { ports, deps } = freshCase(config);
      const sent = encode(body, enc);
      const { headers, signature } = signedHeaders(h, sent.decoded);
      const event = buildEvent({
        method: 'POST',
        path: route.path,
        eventBody: sent.eventBody,
        isBase64Encoded: sent.isBase64Encoded,
        headers,
        sourceIp: ip,
      });

      const answer = await invoke(target.build(deps), event, leakable(h.mode, signature));
      tally(routeId, answer.statusCode);

      const pass = signatureShouldPass(h.mode, h.ts, config);
      if (!expectSizeRule(answer, sent.eventBody, sent.isBase64Encoded)) {
        if (pass === false) sameAs(answer.statusCode, 401);
        if (pass === true && sent.valid === true) sameAs(answer.statusCode, h.key.mode === 'invalid' ? 400 : 202);
      }
      if (answer.statusCode === 202) {
        expect(answer.json).toMatchObject({ status: 'queued', task_id: expect.any(String) });
        expectExactlyOneHandOff(
          ports,
          answer.json.task_id,
          target.handOff as 'workflow' | 'queue',
          h.key.mode === 'valid',
        );
      } else {
        expect(answer.statusCode).toBeGreaterThanOrEqual(400);
        expectNothingHandedOff(ports);
      }
      // The rate limit runs first and counts every request, failed signatures included (spec §8).
      lengthOf(ports.window.keysHit, route.rateLimited ? 1 : 0);
    },
  );
};

/**
 * Repeats of one correctly signed valid request with one Idempotency-Key: every answer is 202 with
 * the first task id, and exactly one task was handed off.
 */
export const idempotentRepeatProperty = (routeId: string) => {
  const route = routeOf(routeId);
  const target = TARGETS[routeId];
  return fc.asyncProperty(
    validBodyFor(routeId),
    fc.stringMatching(/^[\x21-\x7e]{1,64}$/),
    fc.integer({ min: 2, max: 4 }),
    idempotencyHeaderName,
    async (body, key, repeats, keyName) => {
      const { ports, deps } = freshCase({
        requireTimestamp: false,
        rotation: false,
        slackSecret: false,
        allowUnsignedSlack: true,
      });
      const handler = target.build(deps);
      const text = JSON.stringify(body);
      const signature = createHmac('sha256', SECRET).update(text).digest('hex');
      const ids: unknown[] = [];
      for (let i = 0; i < repeats; i += 1) {
        const event = buildEvent({
          method: 'POST',
          path: route.path,
          eventBody: text,
          isBase64Encoded: false,
          headers: { 'x-webhook-signature': signature, [keyName]: key },
          sourceIp: '198.51.100.1',
        });
        const answer = await invoke(handler, event);
        tally(`${routeId} (repeat)`, answer.statusCode);
        sameAs(answer.statusCode, 202);
        ids.push(answer.json.task_id);
      }
      sameAs(new Set(ids).size, 1);
      expectExactlyOneHandOff(ports, ids[0], target.handOff as 'workflow' | 'queue', true);
    },
  );
};

const taskIdInPath = fc.oneof(
  fc.constant(EXISTING_TASK_ID),
  fc.constant(EXISTING_TASK_ID.toUpperCase()),
  fc.uuid(),
  fc.string({ unit: 'binary', maxLength: 60 }),
  fc.constantFrom(
    '',
    '..',
    '../../etc/passwd',
    '%2e%2e',
    `${EXISTING_TASK_ID}/x`,
    `${EXISTING_TASK_ID} `,
    'null',
    '__proto__',
    'constructor',
    'x'.repeat(5000),
  ),
);

/**
 * GET /webhook/tasks/{task_id}: the signature covers the path and query. 401 for a failing
 * signature, then 400 for a non-UUID, 404 for an unknown task, 200 with the task view; it writes
 * nothing, whatever it is sent.
 */
export const taskLookupProperty = () =>
  fc.asyncProperty(
    caseConfig,
    taskIdInPath,
    fc.option(fc.string({ unit: 'binary', maxLength: 60 }), { nil: undefined }),
    fc.option(jsonBodies('GetTask'), { nil: undefined }),
    encoding,
    webhookHeaders,
    sourceIp,
    fc.boolean(),
    async (config, taskId, query, body, enc, h, ip, withPathParameters) => {
      const { ports, deps } = freshCase(config);
      const path = `/webhook/tasks/${taskId}`;
      const signedPath = path + (query ? `?${query}` : '');
      const { headers, signature } = signedHeaders(h, Buffer.from(signedPath, 'utf8'));
      const sent = body ? encode(body, enc) : { eventBody: undefined, isBase64Encoded: false };
      const event = buildEvent({
        method: 'GET',
        path,
        rawQueryString: query,
        eventBody: sent.eventBody,
        isBase64Encoded: sent.isBase64Encoded,
        headers,
        sourceIp: ip,
        ...(withPathParameters ? { pathParameters: { task_id: taskId } } : {}),
      });

      const answer = await invoke(TARGETS.GetTask.build(deps), event, leakable(h.mode, signature));
      tally('GetTask', answer.statusCode);

      if (!expectSizeRule(answer, sent.eventBody, sent.isBase64Encoded)) {
        const pass = signatureShouldPass(h.mode, h.ts, config);
        if (pass === false) sameAs(answer.statusCode, 401);
        if (pass === true) {
          const isUuid = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i.test(taskId);
          const expected = !isUuid ? 400 : taskId.toLowerCase() === EXISTING_TASK_ID ? 200 : 404;
          // Without pathParameters the id is read from the path; a slash in it makes it no id at all.
          if (withPathParameters || !taskId.includes('/')) sameAs(answer.statusCode, expected);
        }
      }
      if (answer.statusCode === 200) {
        expect(answer.json).toMatchObject({ task_id: EXISTING_TASK_ID, state: 'succeeded' });
        expect(answer.json).not.toHaveProperty('request');
        expect(answer.json).not.toHaveProperty('origin');
      }
      // A lookup never writes.
      expectNothingHandedOff(ports);
      lengthOf(ports.tasks.removed, 0);
      lengthOf(ports.window.keysHit, 1);
    },
  );

const dayText = fc.oneof(
  fc
    .date({ min: new Date('1970-01-01T00:00:00Z'), max: new Date('2200-12-31T00:00:00Z'), noInvalidDate: true })
    .map((d) => d.toISOString().slice(0, 10)),
  fc.constantFrom(
    '2026-11-25',
    '2026-02-30',
    '2026-13-01',
    '26-11-25',
    '2026-1-5',
    '',
    ' 2026-11-25',
    '2026-11-25T00:00:00Z',
    '9999-12-31',
    '0000-01-01',
  ),
  fc.string({ unit: 'binary', maxLength: 30 }),
);

/**
 * GET /webhook/spend?from=&to= (issue 24): signed over path and query like GetTask. 401 for a failing
 * signature; then 400 with the range's own text, or 200 with the report for the first page of the asked days;
 * never 5xx, never a write, whatever dates it is sent.
 */
export const spendQueryProperty = () =>
  fc.asyncProperty(
    caseConfig,
    fc.option(dayText, { nil: undefined }),
    fc.option(dayText, { nil: undefined }),
    webhookHeaders,
    sourceIp,
    async (config, from, to, h, ip) => {
      const { ports, deps } = freshCase(config);
      const params = new URLSearchParams();
      if (from !== undefined) params.set('from', from);
      if (to !== undefined) params.set('to', to);
      const query = params.toString();
      const path = '/webhook/spend';
      const { headers, signature } = signedHeaders(h, Buffer.from(path + (query ? `?${query}` : ''), 'utf8'));
      const event = buildEvent({
        method: 'GET',
        path,
        rawQueryString: query,
        eventBody: undefined,
        isBase64Encoded: false,
        headers,
        sourceIp: ip,
      });

      const answer = await invoke(TARGETS.Spend.build(deps), event, leakable(h.mode, signature));
      tally('Spend', answer.statusCode);

      expect(answer.statusCode).toBeLessThan(500);
      const pass = signatureShouldPass(h.mode, h.ts, config);
      if (pass === false) sameAs(answer.statusCode, 401);
      if (pass === true) {
        const range = spendRange(from, to, new Date(NOW_S * 1000).toISOString().slice(0, 10));
        if ('error' in range) expect(answer).toMatchObject({ statusCode: 400, json: { error: range.error } });
        else {
          // The first page of the asked days (issue 38 §5: at most DEFAULT_SPEND_PAGE_DAYS without `limit`).
          const page = spendPage(range.days, DEFAULT_SPEND_PAGE_DAYS);
          expect(answer).toMatchObject({
            statusCode: 200,
            json: { from: page?.days[0], to: page?.days[page.days.length - 1] },
          });
        }
      }
      expectNothingHandedOff(ports);
      lengthOf(ports.tasks.removed, 0);
    },
  );

/**
 * Unsigned read routes (marketplace summary, health, OpenAPI): whatever the body and headers,
 * 200 with their document (413 allowed only over the size limit); nothing handed off.
 */
export const readRouteProperty = (routeId: string) => {
  const route = routeOf(routeId);
  return fc.asyncProperty(
    caseConfig,
    fc.option(jsonBodies('CreateOrder'), { nil: undefined }),
    encoding,
    webhookHeaders,
    fc.option(fc.string({ unit: 'binary', maxLength: 60 }), { nil: undefined }),
    sourceIp,
    async (config, body, enc, h, query, ip) => {
      const { ports, deps } = freshCase(config);
      const sent = body ? encode(body, enc) : { eventBody: undefined, isBase64Encoded: false };
      const { headers } = signedHeaders(h, sent.eventBody ? Buffer.from(sent.eventBody) : Buffer.alloc(0));
      const event = buildEvent({
        method: 'GET',
        path: route.path,
        rawQueryString: query,
        eventBody: sent.eventBody,
        isBase64Encoded: sent.isBase64Encoded,
        headers,
        sourceIp: ip,
      });

      const answer = await invoke(TARGETS[routeId].build(deps), event);
      tally(routeId, answer.statusCode);

      // These routes read no body: one over the limit may be refused (413) or ignored (200).
      const oversized =
        decodedOf(sent.eventBody, sent.isBase64Encoded).length > LIMIT ||
        (sent.isBase64Encoded && Math.floor(((sent.eventBody ?? '').length * 3) / 4) > LIMIT);
      expect(oversized ? [200, 413] : [200]).toContain(answer.statusCode);
      if (answer.statusCode === 200) {
        if (routeId === 'MarketplaceSummary')
          expect(answer.json).toMatchObject({ status: 'ok', total_servers: 2, total_available: 1 });
        if (routeId === 'Health') expect(answer.json).toEqual({ status: 'ok' });
        if (routeId === 'OpenApi') expect(answer.json).toHaveProperty('openapi');
      }
      expectNothingHandedOff(ports);
      lengthOf(ports.window.keysHit, route.rateLimited ? 1 : 0);
    },
  );
};

// ---- Slack ------------------------------------------------------------------------------------------

// `_` stands for a space in a GPU name, so a word of underscores alone names no GPU (a usage answer).
const slackWord = fc.stringMatching(/^[A-Za-z0-9_.-]{1,30}$/).filter((w) => /[^_]/.test(w));
/** Texts that are valid commands (case-insensitive subcommand, surrounding whitespace). */
const validCommand = fc.oneof(
  fc.constantFrom('status', 'STATUS', '  Status  ', 'status now please'),
  fc
    .tuple(
      fc.constantFrom('rent', 'RENT', 'Rent'),
      slackWord,
      fc.option(fc.constantFrom('0.5', '$2', '.75', '10'), { nil: undefined }),
    )
    .map(([c, g, p]) => [c, g, p].filter(Boolean).join(' ')),
  fc.tuple(fc.constantFrom('cancel', 'CANCEL'), fc.integer({ min: 1, max: 1e12 })).map(([c, id]) => `${c} ${id}`),
);
const anyText = fc.oneof(
  fc.string({ unit: 'binary', maxLength: 80 }),
  fc.constantFrom(
    '',
    ' ',
    'rent',
    'cancel',
    'cancel 0',
    'cancel -1',
    'cancel 1.5',
    'cancel 99999999999999999999',
    'rent a b c',
    'rent A100 free',
    'rent A100 -1',
    'rm -rf /',
    '<!channel>',
    '&lt;',
    'x'.repeat(2001),
  ),
  fc
    .tuple(
      fc.constantFrom('rent', 'cancel', 'status'),
      fc.array(fc.string({ unit: 'binary', maxLength: 15 }), { maxLength: 3 }),
    )
    .map(([c, a]) => [c, ...a].join(' ')),
);
const responseUrl = fc.option(
  fc.oneof(
    fc.webUrl(),
    fc.constantFrom(
      'https://hooks.slack.com/commands/T1/1/abc',
      'http://127.0.0.1/x',
      'http://169.254.169.254/',
      'file:///etc/passwd',
      'not a url',
      '',
      'h'.repeat(3000),
    ),
  ),
  { nil: undefined },
);

interface SlackForm {
  readonly text: string;
  readonly valid: boolean;
  readonly command?: string;
  readonly responseUrl?: string;
  readonly triggerId?: string;
  readonly extra: Record<string, string>;
}

const slackForm: fc.Arbitrary<SlackForm> = fc
  .record({
    pick: fc.oneof(
      validCommand.map((text) => ({ text, valid: true })),
      anyText.map((text) => ({ text, valid: false })),
    ),
    command: fc.option(fc.oneof(fc.constant('/gpu'), fc.string({ unit: 'binary', maxLength: 120 })), {
      nil: undefined,
    }),
    responseUrl,
    triggerId: fc.option(
      fc.oneof(fc.stringMatching(/^[0-9.a-f]{5,40}$/), fc.string({ unit: 'binary', maxLength: 300 })),
      { nil: undefined },
    ),
    extra: fc.dictionary(fc.stringMatching(/^[a-z_]{1,12}$/), fc.string({ unit: 'binary', maxLength: 30 }), {
      maxKeys: 3,
    }),
  })
  .map(({ pick, command, responseUrl: url, triggerId, extra }) => ({
    text: pick.text,
    // Over-long form fields make the form invalid (usage answer); any command name of ≤100 characters is accepted.
    valid: pick.valid && (command === undefined || command.length <= 100) && (url === undefined || url.length <= 2048),
    command,
    responseUrl: url,
    triggerId,
    extra,
  }));

const slackBody = fc.oneof(
  { weight: 5, arbitrary: slackForm.map((f) => ({ form: f })) },
  { weight: 2, arbitrary: jsonBodies('Status').map((b) => ({ raw: b })) },
);

/**
 * POST /slack/command: 200 with an `in_channel` message (exactly one hand-off, the task id in the
 * text) or an `ephemeral` one (nothing handed off); 401 only for a configured Slack secret and a
 * bad signature; 403 for every command when there is no secret and unsigned commands are not
 * allowed (ALLOW_UNSIGNED_SLACK=false); 413 over the limit. Valid commands with a valid (or no required) signature are
 * always queued.
 */
export const slackProperty = () => {
  const route = routeOf('SlackCommand');
  return fc.asyncProperty(
    caseConfig,
    slackBody,
    fc.constantFrom('text', 'base64', 'base64', 'base64-garbage'),
    fc.constantFrom('absent', 'garbage', 'correct', 'correct', 'stale', 'wrong-secret', 'no-version'),
    fc.constantFrom('x-slack-signature', 'X-Slack-Signature'),
    extraHeaders,
    sourceIp,
    async (config, body, enc, sigMode, sigName, extra, ip) => {
      const { ports, deps } = freshCase(config);
      let spec: BodySpec;
      let valid: boolean | undefined;
      if ('form' in body) {
        const params = new URLSearchParams();
        for (const [k, v] of Object.entries(body.form.extra)) params.append(k, v);
        params.set('text', body.form.text);
        if (body.form.command !== undefined) params.set('command', body.form.command);
        if (body.form.responseUrl !== undefined) params.set('response_url', body.form.responseUrl);
        if (body.form.triggerId !== undefined) params.set('trigger_id', body.form.triggerId);
        params.set('user_id', 'U123');
        spec = { bytes: Buffer.from(params.toString(), 'utf8'), valid: body.form.valid, label: 'form' };
        valid = body.form.valid;
      } else {
        spec = body.raw;
        valid = undefined;
      }
      const sent = encode(spec, enc as 'text' | 'base64' | 'base64-garbage');
      if (sent.valid === undefined) valid = undefined;
      const ts = sigMode === 'stale' ? String(NOW_S - 301) : String(NOW_S - 5);
      const base = Buffer.concat([Buffer.from(`v0:${ts}:`), sent.decoded]);
      const mac = (secret: string) => createHmac('sha256', secret).update(base).digest('hex');
      const headers: Record<string, string> = { ...extra, 'content-type': 'application/x-www-form-urlencoded' };
      if (sigMode !== 'absent') {
        headers['X-Slack-Request-Timestamp'] = ts;
        headers[sigName] =
          sigMode === 'garbage'
            ? 'v0=deadbeef'
            : sigMode === 'wrong-secret'
              ? `v0=${mac('nope')}`
              : sigMode === 'no-version'
                ? mac(SLACK_SECRET)
                : `v0=${mac(SLACK_SECRET)}`;
      }
      const event = buildEvent({
        method: 'POST',
        path: route.path,
        eventBody: sent.eventBody,
        isBase64Encoded: sent.isBase64Encoded,
        headers,
        sourceIp: ip,
      });

      const answer = await invoke(
        TARGETS.SlackCommand.build(deps),
        event,
        sigMode === 'correct' ? [mac(SLACK_SECRET)] : [],
      );
      tally('SlackCommand', answer.statusCode === 200 ? `200 ${String(answer.json.response_type)}` : answer.statusCode);

      const refusedUnsigned = !config.slackSecret && !config.allowUnsignedSlack;
      const signaturePasses = !config.slackSecret || sigMode === 'correct';
      if (!expectSizeRule(answer, sent.eventBody, sent.isBase64Encoded)) {
        sameAs(answer.statusCode, refusedUnsigned ? 403 : signaturePasses ? 200 : 401);
        if (!refusedUnsigned && signaturePasses && valid === true) sameAs(answer.json.response_type, 'in_channel');
      }
      if (answer.statusCode === 200) expect(['in_channel', 'ephemeral']).toContain(answer.json.response_type);
      if (answer.statusCode === 200 && answer.json.response_type === 'in_channel') {
        const taskId = [...ports.tasks.records.keys()].find((id) => id !== EXISTING_TASK_ID);
        expect(String(answer.json.text)).toContain(String(taskId));
        const kind = ports.tasks.records.get(String(taskId))?.kind;
        expectExactlyOneHandOff(
          ports,
          taskId,
          kind === 'create-order' ? 'workflow' : 'queue',
          Boolean(ports.idempotency.keys.size),
        );
        // Slack's trigger_id is the only key a Slack request can bind.
        expect(ports.idempotency.keys.size).toBeLessThanOrEqual(1);
      } else {
        expectNothingHandedOff(ports);
      }
      // Rate limited like the webhook routes (issue 21 item 4): every request counts once, first.
      lengthOf(ports.window.keysHit, route.rateLimited ? 1 : 0);
    },
  );
};
