/**
 * Shared pieces of the API fuzz suite: a fuzz target per route of lib/routes.ts (the real handler
 * and middleware chain over in-memory ports that count every hand-off), arbitraries for bodies,
 * encodings, signatures, timestamps and idempotency keys, and the checks every response must pass.
 *
 * Each generated request carries what the test knows about it (body known valid? signature correct
 * for what is actually sent? timestamp fresh?), so the properties can demand exact outcomes (401
 * for a bad signature, 413 over 64 KiB, 202 for a correctly signed valid request) instead of only
 * "not a 5xx".
 */
import { isDeepStrictEqual } from 'node:util';
import { createCancelTaskHandler } from '../../../lambdas/handlers/api/cancel-task';
import {
  createAdminKeysCreateHandler,
  createAdminKeysListHandler,
  createAdminKeysRevokeHandler,
  createAdminKeysDeleteHandler,
  createAdminKeysSshKeyHandler,
} from '../../../lambdas/handlers/api/admin-keys';
import { FakeCallerKeyStore, fakeSealer } from '../../fakes/caller-keys';
import { createAdminHostsAvoidHandler, createAdminHostsClearHandler } from '../../../lambdas/handlers/api/admin-hosts';
import { createHostsHandler } from '../../../lambdas/handlers/api/hosts';
import { emptyHostRecord, type HostAvoidance } from '../../../lambdas/domain/hosts/host-records';
import { createHmac } from 'node:crypto';
import fc from 'fast-check';
import type { Context } from 'aws-lambda';
import { ROUTES } from '../../../contract/routes';
import type { RelayEnv } from '../../../lambdas/adapters/env';
import { testEnv } from '../../fakes/env';
import type { Server } from '../../../lambdas/domain/marketplace-types';
import type { MarketplaceClient } from '../../../lambdas/domain/ports';
import type { TaskRecord } from '../../../lambdas/domain/task';
import { createCancelOrderHandler } from '../../../lambdas/handlers/api/cancel-order';
import type { AcceptDeps } from '../../../lambdas/handlers/api/accept-deps';
import type { ApiHandler } from '../../../lambdas/handlers/api/chain';
import { createCreateOrderHandler } from '../../../lambdas/handlers/api/create-order';
import { createExtendOrderHandler } from '../../../lambdas/handlers/api/extend-order';
import { createSetSpotPriceHandler } from '../../../lambdas/handlers/api/set-spot-price';
import { createGetTaskHandler } from '../../../lambdas/handlers/api/get-task';
import { createSpendHandler } from '../../../lambdas/handlers/api/spend';
import { createHealthHandler } from '../../../lambdas/handlers/api/health';
import { createMarketplaceSummaryHandler } from '../../../lambdas/handlers/api/marketplace-summary';
import { createOpenApiHandler } from '../../../lambdas/handlers/api/openapi';
import { createPriceAlertHandler } from '../../../lambdas/handlers/api/price-alert';
import { createSlackCommandHandler } from '../../../lambdas/handlers/api/slack-command';
import { createStatusHandler } from '../../../lambdas/handlers/api/status';
import type { RelayEvent } from '../../../lambdas/middleware/http';
import { lambdaContext } from '../../fixtures/events/api-event';
import { FakeIdempotencyStore } from '../../fakes/idempotency';
import { FakeQueue } from '../../fakes/job-queue';
import { FakeSlidingWindow } from '../../fakes/sliding-window';
import { FakeTasks } from '../../fakes/tasks';
import { FakeWorkflow } from '../../fakes/workflow-starter';

/** Cases per route; 9 routes give 13 500 cases per run (the hardening issue asks for ≥ 10 000). */
export const RUNS_PER_ROUTE = 1_500;

/** The relay's body limit (middleware/body.ts), restated so a silent change of the limit fails here. */
export const LIMIT = 64 * 1024;

export const SECRET = 'fuzz-webhook-secret-0f3a';
export const PREVIOUS_SECRET = 'fuzz-previous-secret-77c1';
export const SLACK_SECRET = 'fuzz-slack-signing-secret-19be';
/** Fixed clock of every case (whole seconds, so timestamp offsets are exact). */
export const NOW_MS = 1_700_000_000_000;
export const NOW_S = NOW_MS / 1000;
/** A task that exists in every case's repository (the lookup route finds it). */
export const EXISTING_TASK_ID = '6f1c0d9e-1111-4222-8333-444455556666';

const hmac = (secret: string, data: Buffer): string => createHmac('sha256', secret).update(data).digest('hex');

// ---- fuzz targets: every route of lib/routes.ts ------------------------------------------------

/** The ports one case runs against; every write is observable. */
export interface Ports {
  readonly tasks: FakeTasks;
  readonly workflow: FakeWorkflow;
  readonly queue: FakeQueue;
  readonly idempotency: FakeIdempotencyStore;
  readonly window: FakeSlidingWindow;
  readonly marketplaceCalls: { count: number };
}

export interface CaseConfig {
  readonly requireTimestamp: boolean;
  /** Secret rotation in progress: the previous secret is accepted too. */
  readonly rotation: boolean;
  readonly slackSecret: boolean;
  /** ALLOW_UNSIGNED_SLACK: without a Slack secret, commands pass (true) or are refused with 403 (false). */
  readonly allowUnsignedSlack: boolean;
}

const envCache = new Map<string, RelayEnv>();
const envFor = (config: CaseConfig): RelayEnv => {
  const key = `${config.requireTimestamp}/${config.allowUnsignedSlack}`;
  let env = envCache.get(key);
  if (!env) {
    env = testEnv({
      WEBHOOK_SECRET: SECRET,
      ALLOW_PRIVATE_CALLBACKS: 'false',
      REQUIRE_WEBHOOK_TIMESTAMP: String(config.requireTimestamp),
      ALLOW_UNSIGNED_SLACK: String(config.allowUnsignedSlack),
      // Each case gets fresh ports, so the limit is never reached; 429 is tested elsewhere.
      MAX_REQUESTS_PER_MINUTE: '60',
    });
    envCache.set(key, env);
  }
  return env;
};

const SERVERS = [
  { id: 1, rented: false, gpu_array: ['NVIDIA A100'], price: { on_demand: {}, spot: {}, usd_per_hour: { spot: 0.4 } } },
  {
    id: 2,
    rented: true,
    gpu_array: ['NVIDIA H100', 'NVIDIA H100'],
    price: { on_demand: {}, spot: {}, usd_per_hour: {} },
  },
  { id: 3, rented: false, gpu_array: [], price: { on_demand: {}, spot: {}, usd_per_hour: { spot: 0.1 } } },
] as unknown as Server[];

const existingRecord: TaskRecord = {
  task_id: EXISTING_TASK_ID,
  kind: 'status',
  state: 'succeeded',
  request: {},
  origin: { source: 'webhook' },
  result: { success: true, total_orders: 0, active: 0, creating: 0, orders: [] },
  created_at: new Date(NOW_MS - 60_000).toISOString(),
  updated_at: new Date(NOW_MS - 30_000).toISOString(),
  finished_at: new Date(NOW_MS - 30_000).toISOString(),
};

/** Fresh ports and deps for one case. */
export const freshCase = (config: CaseConfig) => {
  let n = 0;
  const ports: Ports = {
    tasks: new FakeTasks(),
    workflow: new FakeWorkflow(),
    queue: new FakeQueue(),
    idempotency: new FakeIdempotencyStore(),
    window: new FakeSlidingWindow(),
    marketplaceCalls: { count: 0 },
  };
  ports.tasks.records.set(EXISTING_TASK_ID, existingRecord);
  const marketplace = {
    listServers: async () => {
      ports.marketplaceCalls.count += 1;
      return SERVERS;
    },
  } as unknown as MarketplaceClient;
  const deps: AcceptDeps & { marketplace: MarketplaceClient } = {
    env: envFor(config),
    window: ports.window,
    tasks: ports.tasks,
    workflow: ports.workflow,
    queue: ports.queue,
    idempotency: ports.idempotency,
    webhookSecrets: async () => (config.rotation ? [SECRET, PREVIOUS_SECRET] : [SECRET]),
    slackSigningSecret: async () => (config.slackSecret ? SLACK_SECRET : undefined),
    now: () => NOW_MS,
    newTaskId: () => {
      n += 1;
      return `00000000-0000-4000-8000-${String(n).padStart(12, '0')}`;
    },
    marketplace,
  };
  return { ports, deps };
};

let openApiHandler: ApiHandler | undefined;

const fakeHostAvoidance = {
  setAvoidance: async (serverId: number, avoided: HostAvoidance | undefined, nowMs: number) => ({
    ...emptyHostRecord(serverId, Math.floor(nowMs / 1000)),
    ...(avoided ? { avoided } : {}),
  }),
  clear: async (serverId: number, nowMs: number) => emptyHostRecord(serverId, Math.floor(nowMs / 1000)),
};

/** `admin`: the caller-key routes; their rules are unit-tested in test/unit/handlers/api/admin-keys.test.ts. */
export type TargetKind = 'accept-json' | 'lookup' | 'read' | 'slack' | 'admin';

export interface FuzzTarget {
  readonly kind: TargetKind;
  /** Where an accepted task goes (accept routes). */
  readonly handOff?: 'workflow' | 'queue';
  readonly build: (deps: ReturnType<typeof freshCase>['deps']) => ApiHandler;
}

/** Route id → how to fuzz it. A route missing here fails the coverage test. */
export const TARGETS: Readonly<Record<string, FuzzTarget>> = {
  CreateOrder: { kind: 'accept-json', handOff: 'workflow', build: (d) => createCreateOrderHandler(() => d) },
  CancelOrder: { kind: 'accept-json', handOff: 'queue', build: (d) => createCancelOrderHandler(() => d) },
  ExtendOrder: { kind: 'accept-json', handOff: 'queue', build: (d) => createExtendOrderHandler(() => d) },
  SetSpotPrice: { kind: 'accept-json', handOff: 'queue', build: (d) => createSetSpotPriceHandler(() => d) },
  PriceAlert: { kind: 'accept-json', handOff: 'queue', build: (d) => createPriceAlertHandler(() => d) },
  CancelTask: { kind: 'accept-json', handOff: 'queue', build: (d) => createCancelTaskHandler(() => d) },
  Status: { kind: 'accept-json', handOff: 'queue', build: (d) => createStatusHandler(() => d) },
  GetTask: { kind: 'lookup', build: (d) => createGetTaskHandler(() => d) },
  // The ledger's days come from a fake that records what was asked (spend.test.ts); nothing is written.
  Spend: { kind: 'lookup', build: (d) => createSpendHandler(() => ({ ...d, spend: { days: async () => new Map() } })) },
  MarketplaceSummary: { kind: 'read', build: (d) => createMarketplaceSummaryHandler(() => d) },
  SlackCommand: { kind: 'slack', build: (d) => createSlackCommandHandler(() => d) },
  Health: { kind: 'read', build: () => createHealthHandler() },
  AdminKeysCreate: {
    kind: 'admin',
    build: (d) => createAdminKeysCreateHandler(() => ({ ...d, store: new FakeCallerKeyStore(), sealer: fakeSealer })),
  },
  AdminKeysList: {
    kind: 'admin',
    build: (d) => createAdminKeysListHandler(() => ({ ...d, store: new FakeCallerKeyStore(), sealer: fakeSealer })),
  },
  AdminKeysRevoke: {
    kind: 'admin',
    build: (d) => createAdminKeysRevokeHandler(() => ({ ...d, store: new FakeCallerKeyStore(), sealer: fakeSealer })),
  },
  AdminKeysSshKey: {
    kind: 'admin',
    build: (d) =>
      createAdminKeysSshKeyHandler(() => ({
        ...d,
        store: new FakeCallerKeyStore(),
        sealer: fakeSealer,
        sshKeys: { get: async () => undefined, put: async () => undefined, remove: async () => undefined },
      })),
  },
  AdminKeysDelete: {
    kind: 'admin',
    build: (d) => createAdminKeysDeleteHandler(() => ({ ...d, store: new FakeCallerKeyStore(), sealer: fakeSealer })),
  },
  // Host records (issue 31 §2): the store is a fake answering an empty list and echoing avoidance.
  Hosts: {
    kind: 'lookup',
    build: (d) => createHostsHandler(() => ({ ...d, hosts: { page: async () => ({ records: [], avoided: 0 }) } })),
  },
  AdminHostsAvoid: {
    kind: 'admin',
    build: (d) => createAdminHostsAvoidHandler(() => ({ ...d, hosts: fakeHostAvoidance })),
  },
  AdminHostsClear: {
    kind: 'admin',
    build: (d) => createAdminHostsClearHandler(() => ({ ...d, hosts: fakeHostAvoidance })),
  },
  // The document is built once per handler (per Lambda instance): share one handler across cases.
  OpenApi: { kind: 'read', build: (d) => (openApiHandler ??= createOpenApiHandler(() => d)) },
};

export const routeOf = (id: string) => {
  const route = ROUTES.find((r) => r.id === id);
  if (!route) throw new Error(`no route ${id}`);
  return route;
};

// ---- bodies --------------------------------------------------------------------------------------

/** A body as bytes, and whether it is known to be valid for the route (undefined: unknown). */
export interface BodySpec {
  readonly bytes: Buffer | undefined;
  readonly valid: boolean | undefined;
  readonly label: string;
}

const spec = (text: string | Buffer | undefined, valid: boolean | undefined, label: string): BodySpec => ({
  bytes: text === undefined ? undefined : Buffer.isBuffer(text) ? text : Buffer.from(text, 'utf8'),
  valid,
  label,
});

/** Text that survives JSON and zod's trim: non-blank after trimming, bounded. */
const nonBlank = (max: number) =>
  fc
    .oneof(
      fc.string({ minLength: 1, maxLength: Math.min(max, 40) }),
      fc.string({ unit: 'grapheme', minLength: 1, maxLength: Math.min(max, 20) }),
      fc.constantFrom('RTX 4090', 'A100', 'h100', 'Ω≈ç√', '👾 GPU', 'ג׳יפיו', 'e\u0301', 'a\u200bb', 'x\u0000y'),
    )
    .filter((s) => s.trim().length > 0 && s.length <= max);

const publicCallback = fc.stringMatching(/^[a-z0-9/_-]{0,30}$/).map((p) => `https://relay-callbacks.example.com/${p}`);
const price = fc.double({ min: 0.0001, max: 10_000, noNaN: true, noDefaultInfinity: true });
const envName = fc.oneof(
  fc.stringMatching(/^[A-Za-z_][A-Za-z0-9_]{0,20}$/),
  fc.constantFrom('__proto__', 'constructor', 'prototype', 'hasOwnProperty'),
);
/** A lease length: (0, 720] hours, fractions allowed. */
const leaseHours = fc.oneof(
  fc.double({ min: 0.001, max: 720, noNaN: true, noDefaultInfinity: true }),
  fc.integer({ min: 1, max: 720 }),
);
const orderId = fc.oneof(
  fc.integer({ min: 1, max: Number.MAX_SAFE_INTEGER }),
  fc.integer({ min: 1, max: 1e9 }).map(String),
);

/** Bodies each signed route must accept (its required fields right, optional ones sometimes, no unknown field: issue 29). */
export const validBodyFor = (routeId: string): fc.Arbitrary<Record<string, unknown>> => {
  switch (routeId) {
    case 'CreateOrder':
      return fc.record(
        {
          gpu_type: nonBlank(100),
          max_price: fc.option(price, { nil: null }),
          image: nonBlank(512),
          use_spot: fc.boolean(),
          callback_url: publicCallback,
          // `&` is refused (production fails such orders): a valid body's values never hold one.
          env: fc.dictionary(
            envName,
            fc.string({ maxLength: 50 }).filter((v) => !v.includes('&')),
            { maxKeys: 5 },
          ),
          max_hours: fc.option(leaseHours, { nil: null }),
        },
        { requiredKeys: ['gpu_type'] },
      );
    case 'CancelOrder':
      return fc.record({ order_id: orderId, callback_url: publicCallback }, { requiredKeys: ['order_id'] });
    case 'ExtendOrder':
      return fc.record(
        { order_id: orderId, hours: leaseHours, callback_url: publicCallback },
        { requiredKeys: ['order_id', 'hours'] },
      );
    case 'SetSpotPrice':
      return fc.record(
        { order_id: orderId, desired_price: price, callback_url: publicCallback },
        { requiredKeys: ['order_id', 'desired_price'] },
      );
    case 'PriceAlert':
      return fc.record(
        { gpu_type: nonBlank(100), target_price: price, image: nonBlank(512), callback_url: publicCallback },
        { requiredKeys: ['gpu_type', 'target_price'] },
      );
    case 'Status':
      return fc.record({ callback_url: fc.option(publicCallback, { nil: null }) }, { requiredKeys: [] });
    default:
      return fc.constant({});
  }
};

/** Every field name any route reads, for wrong-type bodies. */
const FIELDS = [
  'gpu_type',
  'max_price',
  'image',
  'use_spot',
  'callback_url',
  'env',
  'order_id',
  'target_price',
  'max_hours',
  'hours',
  'desired_price',
  'text',
  'command',
  'response_url',
];

const anyValue = fc.oneof(
  fc.string({ unit: 'binary', maxLength: 30 }),
  fc.integer(),
  fc.double(),
  fc.boolean(),
  fc.constant(null),
  fc.constantFrom(
    0,
    -1,
    1e308,
    -0,
    '',
    ' ',
    '0',
    '1e3',
    '12abc',
    'https://',
    'http://127.0.0.1/x',
    'http://169.254.169.254/latest',
    'file:///etc/passwd',
    'javascript:alert(1)',
  ),
  fc.webUrl(),
  fc.jsonValue({ maxDepth: 3 }),
);

/** A JSON object text with trailing whitespace making the whole body exactly `size` bytes (an unknown pad field would be refused: issue 29). */
const paddedTo = (base: Record<string, unknown>, size: number): string => {
  const head = JSON.stringify(base);
  const fill = Math.max(0, size - Buffer.byteLength(head, 'utf8'));
  return `${head}${' '.repeat(fill)}`;
};

const POLLUTION = [
  '{"__proto__":{"polluted":"yes"},"gpu_type":"A100","target_price":1,"order_id":5}',
  '{"constructor":{"prototype":{"polluted":"yes"}},"gpu_type":"A100","target_price":1,"order_id":5}',
  '{"gpu_type":{"__proto__":{"polluted":"yes"}},"order_id":{"constructor":{"prototype":{"polluted":"yes"}}}}',
  '{"gpu_type":"A100","env":{"__proto__":"x","constructor":"y","toString":"z"}}',
  '{"gpu_type":"A100","env":{"__proto__":{"polluted":"yes"}}}',
  '{"__proto__":null,"gpu_type":"A100"}',
  '{"gpu_type":"A100","__proto__":[],"hasOwnProperty":1,"toString":"x","valueOf":{}}',
];

/**
 * Bodies for a JSON route: valid ones (some padded to the 64 KiB boundary), wrong types, arbitrary
 * text, JSON of any shape, binary, huge, deeply nested, prototype-pollution keys and odd unicode.
 */
export const jsonBodies = (routeId: string): fc.Arbitrary<BodySpec> =>
  fc.oneof(
    { weight: 4, arbitrary: validBodyFor(routeId).map((b) => spec(JSON.stringify(b), true, 'valid')) },
    {
      weight: 1,
      arbitrary: fc
        .tuple(validBodyFor(routeId), fc.constantFrom(LIMIT - 1, LIMIT, LIMIT + 1, LIMIT + 1000, 200_000))
        .map(([b, size]) => spec(paddedTo(b, size), size <= LIMIT, `valid padded to ${size} B`)),
    },
    {
      weight: 3,
      arbitrary: fc
        .dictionary(fc.constantFrom(...FIELDS), anyValue, { maxKeys: 6 })
        .map((o) => spec(JSON.stringify(o), undefined, 'wrong types')),
    },
    {
      weight: 2,
      arbitrary: fc.string({ unit: 'binary', maxLength: 200 }).map((s) => spec(s, undefined, 'arbitrary text')),
    },
    { weight: 2, arbitrary: fc.json({ maxDepth: 4 }).map((s) => spec(s, undefined, 'arbitrary JSON')) },
    { weight: 1, arbitrary: fc.uint8Array({ maxLength: 300 }).map((b) => spec(Buffer.from(b), undefined, 'binary')) },
    {
      weight: 1,
      arbitrary: fc
        .tuple(fc.string({ minLength: 1, maxLength: 8 }), fc.integer({ min: LIMIT - 64, max: LIMIT * 3 }))
        .map(([unit, size]) =>
          spec(unit.repeat(Math.ceil(size / unit.length)).slice(0, size), undefined, 'huge string'),
        ),
    },
    {
      weight: 1,
      arbitrary: fc
        .tuple(fc.integer({ min: 1, max: 40_000 }), fc.constantFrom('[', '{"a":', '{"gpu_type":['))
        .map(([depth, open]) => {
          const close = open === '[' ? ']' : open === '{"a":' ? '}' : ']';
          const inner =
            open === '{"gpu_type":['
              ? `${open.repeat(1)}${'['.repeat(depth)}1${']'.repeat(depth)}]}`
              : `${open.repeat(depth)}1${close.repeat(depth)}`;
          return spec(inner, undefined, `nested ${depth}`);
        }),
    },
    { weight: 1, arbitrary: fc.constantFrom(...POLLUTION).map((s) => spec(s, undefined, 'prototype pollution')) },
    {
      weight: 1,
      arbitrary: fc
        .constantFrom(
          '\uFEFF{"gpu_type":"A100"}',
          '{"gpu_type":"\uD800"}',
          '{"gpu_type":"\\uD800\\uDFFF"}',
          '{"gpu_type":"A\u0000"}',
          '{"order_id":"１２３"}',
          '{"gpu_type":"\u202Egpu"}',
          '{"gpu_type":"A100",}',
          "{'gpu_type':'A100'}",
          'null',
          'true',
          '[]',
          '"x"',
          '1',
          '{"a":1}{"b":2}',
        )
        .map((s) => spec(s, undefined, 'unicode and near-JSON')),
    },
    {
      weight: 1,
      arbitrary: fc
        .constantFrom(undefined, '', '   ', '\n\t')
        .map((s) => spec(s, routeId === 'Status' ? true : undefined, 'empty')),
    },
  );

// ---- encodings -----------------------------------------------------------------------------------

export type Encoding = 'text' | 'base64' | 'base64-garbage';
export const encoding: fc.Arbitrary<Encoding> = fc.constantFrom('text', 'text', 'base64', 'base64-garbage');

/** What API Gateway would put in the event for `body` sent with `enc`, and the bytes the relay decodes. */
export const encode = (
  body: BodySpec,
  enc: Encoding,
): { eventBody: string | undefined; isBase64Encoded: boolean; decoded: Buffer; valid: boolean | undefined } => {
  if (body.bytes === undefined)
    return { eventBody: undefined, isBase64Encoded: enc !== 'text', decoded: Buffer.alloc(0), valid: body.valid };
  if (enc === 'base64')
    return { eventBody: body.bytes.toString('base64'), isBase64Encoded: true, decoded: body.bytes, valid: body.valid };
  if (enc === 'base64-garbage') {
    // Claimed base64 but not: text with characters outside the alphabet.
    const eventBody = `${body.bytes.toString('utf8')}!*%`;
    return { eventBody, isBase64Encoded: true, decoded: Buffer.from(eventBody, 'base64'), valid: undefined };
  }
  const eventBody = body.bytes.toString('utf8');
  const decoded = Buffer.from(eventBody, 'utf8');
  // Bytes that were not UTF-8 changed on the way: validity is no longer known.
  return { eventBody, isBase64Encoded: false, decoded, valid: decoded.equals(body.bytes) ? body.valid : undefined };
};

// ---- headers -------------------------------------------------------------------------------------

export type SignatureMode =
  'absent' | 'blank' | 'garbage' | 'wrong-secret' | 'correct' | 'previous' | 'body-only' | 'variant';
// Correct signatures dominate, so most cases get past the signature check to the body rules.
export const signatureMode: fc.Arbitrary<SignatureMode> = fc.oneof(
  { weight: 10, arbitrary: fc.constant<SignatureMode>('correct') },
  {
    weight: 6,
    arbitrary: fc.constantFrom<SignatureMode>(
      'absent',
      'blank',
      'garbage',
      'wrong-secret',
      'previous',
      'body-only',
      'variant',
    ),
  },
);
export const signatureHeaderName = fc.constantFrom(
  'x-webhook-signature',
  'X-Webhook-Signature',
  'X-WEBHOOK-SIGNATURE',
  'x-Webhook-signature',
);

export type TimestampMode = 'absent' | 'blank' | 'fresh' | 'stale' | 'garbage';
export const timestamp: fc.Arbitrary<{ mode: TimestampMode; value?: string }> = fc.oneof(
  { weight: 4, arbitrary: fc.constant({ mode: 'absent' as const }) },
  fc.constantFrom('', ' ', '\t').map((value) => ({ mode: 'blank' as const, value })),
  // ±300 s is still fresh (inclusive).
  {
    weight: 4,
    arbitrary: fc.integer({ min: -300, max: 300 }).map((d) => ({ mode: 'fresh' as const, value: String(NOW_S + d) })),
  },
  fc
    .oneof(fc.integer({ min: 301, max: 10_000_000 }), fc.integer({ min: -NOW_S, max: -301 }))
    .map((d) => ({ mode: 'stale' as const, value: String(NOW_S + d) })),
  fc
    .oneof(
      fc.string({ unit: 'binary', maxLength: 20 }),
      fc.constantFrom(
        '1.7e9',
        `${NOW_S}.5`,
        `-${NOW_S}`,
        `+${NOW_S}`,
        `${NOW_S}s`,
        '0x6553f100',
        '１７００',
        'NaN',
        'Infinity',
        '9'.repeat(13),
      ),
    )
    .filter((v) => v.trim() !== '' && !/^\d+$/.test(v.trim()))
    .map((value) => ({ mode: 'garbage' as const, value })),
);
export const timestampHeaderName = fc.constantFrom('x-webhook-timestamp', 'X-Webhook-Timestamp', 'X-WEBHOOK-TIMESTAMP');

export type KeyMode = 'absent' | 'valid' | 'invalid';
export const idempotencyKey: fc.Arbitrary<{ mode: KeyMode; value?: string }> = fc.oneof(
  { weight: 3, arbitrary: fc.constant({ mode: 'absent' as const }) },
  {
    weight: 2,
    arbitrary: fc
      .oneof(fc.uuid(), fc.stringMatching(/^[\x21-\x7e][\x20-\x7e]{0,199}$/))
      .filter((k) => k.length <= 200 && k.trim() !== '')
      .map((value) => ({ mode: 'valid' as const, value })),
  },
  {
    weight: 2,
    arbitrary: fc
      .oneof(
        fc.constantFrom(
          '',
          ' ',
          '   ',
          'k'.repeat(201),
          'x'.repeat(5000),
          'tab\there',
          'new\nline',
          'del\x7f',
          'ключ',
          '🔑',
          'nul\u0000',
        ),
        fc.string({ unit: 'binary', minLength: 1, maxLength: 30 }).filter((k) => /[^\x20-\x7e]/.test(k)),
      )
      .map((value) => ({ mode: 'invalid' as const, value })),
  },
);
export const idempotencyHeaderName = fc.constantFrom('Idempotency-Key', 'idempotency-key', 'IDEMPOTENCY-KEY');

const SPECIAL_HEADERS =
  /^(x-webhook-signature|x-webhook-timestamp|idempotency-key|x-slack-signature|x-slack-request-timestamp)$/i;
/** Unrelated headers, odd content types included; never one of the headers the relay reads. */
export const extraHeaders = fc
  .tuple(
    fc.dictionary(fc.stringMatching(/^[A-Za-z][A-Za-z0-9-]{0,20}$/), fc.string({ unit: 'binary', maxLength: 40 }), {
      maxKeys: 4,
    }),
    fc.option(
      fc.constantFrom(
        'application/json',
        'text/plain',
        'application/x-www-form-urlencoded',
        'application/json; charset=utf-16',
        '',
        'multipart/form-data; boundary=x',
      ),
      { nil: undefined },
    ),
  )
  .map(([extra, contentType]) => {
    const headers: Record<string, string> = {};
    for (const [k, v] of Object.entries(extra)) if (!SPECIAL_HEADERS.test(k)) headers[k] = v;
    if (contentType !== undefined) headers['content-type'] = contentType;
    return headers;
  });

export const sourceIp = fc.oneof(fc.ipV4(), fc.ipV6(), fc.constantFrom('', 'unknown', '203.0.113.7'));

/** The signature value sent for `mode` over `payload` (bytes the relay will check), with `ts` the effective timestamp. */
export const signatureValue = (
  mode: SignatureMode,
  payload: Buffer,
  ts: string | undefined,
  garbage: string,
  variant: 'upper' | 'padded',
): string | undefined => {
  const signed = ts === undefined ? payload : Buffer.concat([Buffer.from(`${ts}.`, 'utf8'), payload]);
  switch (mode) {
    case 'absent':
      return undefined;
    case 'blank':
      return ' ';
    case 'garbage':
      return garbage;
    case 'wrong-secret':
      return hmac('not-the-secret', signed);
    case 'correct':
      return hmac(SECRET, signed);
    case 'previous':
      return hmac(PREVIOUS_SECRET, signed);
    case 'body-only':
      return hmac(SECRET, payload);
    case 'variant':
      return variant === 'upper' ? hmac(SECRET, signed).toUpperCase() : ` ${hmac(SECRET, signed)} `;
  }
};

/**
 * Whether the webhook signature check must pass (true), must fail (false), or is not pinned down
 * by the contract (undefined: the lenient variants).
 */
export const signatureShouldPass = (
  mode: SignatureMode,
  ts: { mode: TimestampMode },
  config: CaseConfig,
): boolean | undefined => {
  const tsPresent = ts.mode === 'fresh' || ts.mode === 'stale' || ts.mode === 'garbage';
  if (mode === 'absent' || mode === 'blank' || mode === 'garbage' || mode === 'wrong-secret') return false;
  if (tsPresent && ts.mode !== 'fresh') return false;
  if (!tsPresent && config.requireTimestamp) return false;
  if (mode === 'correct') return true;
  if (mode === 'previous') return config.rotation;
  if (mode === 'body-only') return !tsPresent; // with a timestamp, the body alone is the wrong payload
  return undefined;
};

export const caseConfig: fc.Arbitrary<CaseConfig> = fc.record({
  requireTimestamp: fc.constantFrom(false, false, true),
  rotation: fc.boolean(),
  slackSecret: fc.boolean(),
  allowUnsignedSlack: fc.constantFrom(true, true, false),
});

// ---- running one case ----------------------------------------------------------------------------

export interface Answer {
  readonly statusCode: number;
  readonly headers: Record<string, unknown>;
  readonly text: string;
  readonly json: Record<string, unknown>;
}

const PROTOTYPE_KEYS = Object.getOwnPropertyNames(Object.prototype).sort().join(',');

/**
 * Runs `assert` (an expect) only when the plain check `ok` failed, so a failure reads as the expect
 * says. Each expect() call builds every matcher and an Error: thousands per fuzz file, that was 40 %
 * of its CPU. Throws even if `assert` does not (a check and its expect disagreeing is a test bug).
 */
export const ensure = (ok: boolean, assert: () => void): void => {
  if (ok) return;
  assert();
  throw new Error('a fuzz check failed, but its expect passed: the check and its expect disagree');
};

/** `expect(actual).toBe(expected)`, built only when it fails (ensure). */
export const sameAs = (actual: unknown, expected: unknown): void =>
  ensure(Object.is(actual, expected), () => expect(actual).toBe(expected));

/** `expect(actual).toStrictEqual(expected)`, built only when it fails (ensure). */
export const equalTo = (actual: unknown, expected: unknown): void =>
  ensure(isDeepStrictEqual(actual, expected), () => expect(actual).toStrictEqual(expected));

/** `expect(list).toHaveLength(length)`, built only when it fails (ensure). */
export const lengthOf = (list: { readonly length: number }, length: number): void =>
  ensure(list.length === length, () => expect(list).toHaveLength(length));

/**
 * Invokes the handler and checks what every answer must satisfy: the handler does not throw, the
 * status is below 500, the body is JSON (an object with an `error` string from 400 on), it carries
 * no secret, and nothing polluted Object.prototype.
 */
export const invoke = async (
  handler: ApiHandler,
  event: RelayEvent,
  secretsNotToLeak: readonly string[] = [],
): Promise<Answer> => {
  let raw: unknown;
  try {
    raw = await handler(event, lambdaContext() as Context);
  } catch (error) {
    throw new Error(`handler threw: ${error instanceof Error ? `${error.name}: ${error.message}` : String(error)}`);
  }
  const result = raw as { statusCode?: number; headers?: Record<string, unknown>; body?: string };
  ensure(typeof result.statusCode === 'number', () => expect(typeof result.statusCode).toBe('number'));
  const statusCode = result.statusCode as number;
  ensure(statusCode < 500, () => expect(statusCode).toBeLessThan(500));
  ensure(typeof result.body === 'string', () => expect(typeof result.body).toBe('string'));
  const text = result.body as string;
  let json: unknown;
  try {
    json = JSON.parse(text);
  } catch {
    throw new Error(`status ${statusCode}: body is not JSON: ${text.slice(0, 200)}`);
  }
  const isObject = typeof json === 'object' && json !== null && !Array.isArray(json);
  ensure(isObject, () => expect(isObject).toBe(true));
  if (statusCode >= 400) {
    const error = (json as { error?: unknown }).error;
    ensure(typeof error === 'string', () => expect(typeof error).toBe('string'));
    ensure((error as string).length > 0, () => expect((error as string).length).toBeGreaterThan(0));
  }
  for (const secret of [SECRET, PREVIOUS_SECRET, SLACK_SECRET, ...secretsNotToLeak])
    ensure(!text.includes(secret), () => expect(text).not.toContain(secret));
  const prototypeKeys = Object.getOwnPropertyNames(Object.prototype).sort().join(',');
  ensure(prototypeKeys === PROTOTYPE_KEYS, () => expect(prototypeKeys).toBe(PROTOTYPE_KEYS));
  const polluted = ({} as Record<string, unknown>).polluted;
  ensure(polluted === undefined, () => expect(polluted).toBeUndefined());
  return { statusCode, headers: result.headers ?? {}, text, json: json as Record<string, unknown> };
};

/** Hand-offs made during the case (the pre-seeded lookup record excluded). */
export const handOffs = (ports: Ports) => ({
  records: [...ports.tasks.records.keys()].filter((id) => id !== EXISTING_TASK_ID),
  started: ports.workflow.started.length,
  sent: ports.queue.sent.length,
  keys: ports.idempotency.keys.size,
});

/** A rejected request left nothing behind: no record, no start, no message, no bound key. */
export const expectNothingHandedOff = (ports: Ports): void => {
  equalTo(handOffs(ports), { records: [], started: 0, sent: 0, keys: 0 });
};

/** An accepted request made exactly one hand-off, on the route's port, for the task id it answered. */
export const expectExactlyOneHandOff = (
  ports: Ports,
  taskId: unknown,
  via: 'workflow' | 'queue',
  keyed: boolean,
): void => {
  const h = handOffs(ports);
  equalTo(h.records, [taskId]);
  sameAs(ports.tasks.records.get(taskId as string)?.state, 'queued');
  equalTo({ started: h.started, sent: h.sent }, via === 'workflow' ? { started: 1, sent: 0 } : { started: 0, sent: 1 });
  const handedId = via === 'workflow' ? ports.workflow.started[0]?.taskId : ports.queue.sent[0]?.task_id;
  sameAs(handedId, taskId);
  sameAs(h.keys, keyed ? 1 : 0);
};

/** Bytes decoded as the relay does (body middleware). */
export const decodedOf = (eventBody: string | undefined, isBase64Encoded: boolean): Buffer =>
  Buffer.from(eventBody ?? '', isBase64Encoded ? 'base64' : 'utf8');

/** 413 is required over the limit; under it, only a base64 text whose length alone exceeds the limit may get one. */
export const expectSizeRule = (answer: Answer, eventBody: string | undefined, isBase64Encoded: boolean): boolean => {
  const decoded = decodedOf(eventBody, isBase64Encoded);
  if (decoded.length > LIMIT) {
    sameAs(answer.statusCode, 413);
    return true;
  }
  if (answer.statusCode === 413) {
    sameAs(isBase64Encoded && Math.floor(((eventBody ?? '').length * 3) / 4) > LIMIT, true);
    return true;
  }
  return false;
};

/** Builds an API Gateway v2 event. */
export const buildEvent = (input: {
  method: 'GET' | 'POST';
  path: string;
  rawQueryString?: string;
  eventBody: string | undefined;
  isBase64Encoded: boolean;
  headers: Record<string, string>;
  sourceIp: string;
  pathParameters?: Record<string, string>;
}): RelayEvent => ({
  version: '2.0',
  routeKey: `${input.method} ${input.path}`,
  rawPath: input.path,
  rawQueryString: input.rawQueryString ?? '',
  headers: input.headers,
  ...(input.pathParameters ? { pathParameters: input.pathParameters } : {}),
  requestContext: {
    accountId: '123456789012',
    apiId: 'api',
    domainName: 'api.example.com',
    domainPrefix: 'api',
    http: { method: input.method, path: input.path, protocol: 'HTTP/1.1', sourceIp: input.sourceIp, userAgent: 'fuzz' },
    requestId: 'fuzz-request',
    routeKey: `${input.method} ${input.path}`,
    stage: '$default',
    time: '14/Nov/2023:22:13:20 +0000',
    timeEpoch: NOW_MS,
  },
  ...(input.eventBody !== undefined ? { body: input.eventBody } : {}),
  isBase64Encoded: input.isBase64Encoded,
});

/** fast-check parameters shared by the suite: no fixed seed (fast-check prints it on failure). */
export const fuzzParameters = (numRuns = RUNS_PER_ROUTE): fc.Parameters<unknown> => ({ numRuns, endOnFailure: false });
