/**
 * Fuzz (issue 38 §6): every numeric field of every route, through the real handler and middleware
 * chain, with the numbers JSON can carry and DynamoDB cannot store (1e308, 1e-308, 5e-324, 1e400,
 * huge integers), the edges (-0, 0, -1) and NaN-like strings. Each answer is 400 with an `error`
 * naming the field, nothing handed off; never a 5xx. The few values a field takes (0 for a filter
 * or a wait) are accepted. Slack's form gets the same numbers in every numeric argument: a usage
 * reply (ephemeral), nothing queued. A random-double property checks the bounds themselves: a value
 * inside is accepted, one outside refused.
 */
import { createHmac } from 'node:crypto';
import fc from 'fast-check';
import {
  buildEvent,
  expectNothingHandedOff,
  freshCase,
  invoke,
  NOW_S,
  SECRET,
  SLACK_SECRET,
  TARGETS,
  type CaseConfig,
} from './fuzz-kit';
import { signV2, FAKE_CLOCK_TIMESTAMP } from '../../fixtures/events/api-event';

const CONFIG: CaseConfig = { requireTimestamp: false, rotation: false, slackSecret: true, allowUnsignedSlack: false };

/** Numbers as JSON text (1e400 parses to Infinity), and the NaN-like strings. */
const BAD_JSON = [
  '1e308',
  '-1e308',
  '1e-308',
  '5e-324',
  '1e200',
  '1e-200',
  '1e400',
  '-1e400',
  '-0',
  '0',
  '-1',
  '123456789012345678901234567890',
  '9007199254740993',
  '"NaN"',
  '"Infinity"',
  '"-Infinity"',
  '"1e400"',
  '"0.5"',
  'true',
  '[]',
  '{}',
];

interface Field {
  readonly route: string;
  readonly path: string;
  readonly field: string;
  /** The rest of a valid body. */
  readonly base: Record<string, unknown>;
  /** The field's value inside a list (exclude_servers). */
  readonly inList?: boolean;
  /** Among BAD_JSON, the values this field accepts (202/201). */
  readonly accepts?: readonly string[];
  /** Whether a double is within the field's bounds (the random property's oracle). */
  readonly inRange: (n: number) => boolean;
  readonly pathParameters?: Record<string, string>;
}

const usdPerHour = (n: number) => n >= 0.000001 && n <= 10_000;
const hours = (n: number) => n >= 0.001 && n <= 720;
const filter = (max: number) => (n: number) => n === 0 || (n >= 0.000001 && n <= max);
const waitSeconds = (n: number) => Number.isInteger(n) && n >= 0 && n <= 86_400;
const orderId = (n: number) => Number.isSafeInteger(n) && n > 0;
const ratingCount = (n: number) => Number.isInteger(n) && n >= 1 && n <= 1_000_000;

const CREATE = { gpu_type: 'RTX 4090' };
const ALERT = { gpu_type: 'RTX 4090', target_price: 0.5 };
const hostFilters = (route: string, path: string, base: Record<string, unknown>): Field[] => [
  { route, path, base, field: 'wait_seconds', accepts: ['0', '-0'], inRange: waitSeconds },
  { route, path, base, field: 'min_reliability', accepts: ['0', '-0'], inRange: filter(1) },
  { route, path, base, field: 'min_rating', accepts: ['0', '-0'], inRange: filter(5) },
  { route, path, base, field: 'min_rating_count', inRange: ratingCount },
  { route, path, base, field: 'exclude_servers', inList: true, inRange: orderId },
];

const FIELDS: readonly Field[] = [
  { route: 'CreateOrder', path: '/webhook/create-order', base: CREATE, field: 'max_price', inRange: usdPerHour },
  { route: 'CreateOrder', path: '/webhook/create-order', base: CREATE, field: 'max_hours', inRange: hours },
  ...hostFilters('CreateOrder', '/webhook/create-order', CREATE),
  { route: 'PriceAlert', path: '/webhook/price-alert', base: ALERT, field: 'target_price', inRange: usdPerHour },
  ...hostFilters('PriceAlert', '/webhook/price-alert', ALERT),
  { route: 'CancelOrder', path: '/webhook/cancel-order', base: {}, field: 'order_id', inRange: orderId },
  { route: 'ExtendOrder', path: '/webhook/extend-order', base: { hours: 2 }, field: 'order_id', inRange: orderId },
  { route: 'ExtendOrder', path: '/webhook/extend-order', base: { order_id: 42 }, field: 'hours', inRange: hours },
  {
    route: 'SetSpotPrice',
    path: '/webhook/set-spot-price',
    base: { desired_price: 2 },
    field: 'order_id',
    inRange: orderId,
  },
  {
    route: 'SetSpotPrice',
    path: '/webhook/set-spot-price',
    base: { order_id: 42 },
    field: 'desired_price',
    inRange: (n) => n >= 0.00000001 && n <= 10_000_000,
  },
  {
    route: 'AdminKeysCreate',
    path: '/admin/keys',
    base: { name: 'team', scopes: ['order'] },
    field: 'orders_per_hour',
    inRange: (n) => Number.isInteger(n) && n >= 1 && n <= 100_000,
  },
  {
    route: 'AdminKeysCreate',
    path: '/admin/keys',
    base: { name: 'team', scopes: ['order'] },
    field: 'budget_usd_per_day',
    inRange: (n) => n >= 0.01 && n <= 1_000_000,
  },
  {
    route: 'AdminHostsAvoid',
    path: '/admin/hosts/7/avoid',
    base: {},
    field: 'hours',
    inRange: (n) => n >= 0.001 && n <= 720,
    pathParameters: { server_id: '7' },
  },
];

/** The body text with `raw` (JSON text) as the field's value. */
const bodyWith = (f: Field, raw: string): string => {
  const head = JSON.stringify(f.base);
  const value = f.inList ? `[${raw}]` : raw;
  return `${head.slice(0, -1)}${head.length > 2 ? ',' : ''}"${f.field}":${value}}`;
};

/** Sends `body` signed (v2) to the field's route through the real handler; the answer and the ports. */
const send = async (f: Field, body: string) => {
  const { ports, deps } = freshCase(CONFIG);
  const event = buildEvent({
    method: 'POST',
    path: f.path,
    eventBody: body,
    isBase64Encoded: false,
    headers: {
      'content-type': 'application/json',
      'x-webhook-timestamp': FAKE_CLOCK_TIMESTAMP,
      'x-webhook-signature': signV2(SECRET, 'POST', f.path, body),
    },
    sourceIp: '203.0.113.7',
    ...(f.pathParameters ? { pathParameters: f.pathParameters } : {}),
  });
  const target = TARGETS[f.route];
  if (!target) throw new Error(`no fuzz target ${f.route}`);
  return { answer: await invoke(target.build(deps), event), ports };
};

const accepted = (status: number) => status === 202 || status === 201 || status === 200;

describe('Fuzz: numeric fields of every route (issue 38 §6)', () => {
  describe.each(FIELDS.map((f) => [`${f.route} ${f.field}`, f] as const))('%s', (_name, f) => {
    it.each(BAD_JSON)('%s → 400 naming the field (or accepted where the field takes it), never 5xx', async (raw) => {
      const { answer, ports } = await send(f, bodyWith(f, raw));
      if (f.accepts?.includes(raw)) {
        expect(accepted(answer.statusCode)).toBe(true);
        return;
      }
      expect(answer.statusCode).toBe(400);
      expect(String(answer.json.error)).toContain(f.field);
      expectNothingHandedOff(ports);
    });
  });

  it('a random double is accepted inside the bounds and refused (400 naming the field) outside', async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.constantFrom(...FIELDS),
        fc.oneof(
          fc.double({ noNaN: true, noDefaultInfinity: true }),
          fc.double({ min: -1, max: 2, noNaN: true }),
          fc.integer({ min: -1000, max: 2_000_000 }),
        ),
        async (f, n) => {
          const { answer, ports } = await send(f, bodyWith(f, JSON.stringify(n)));
          // JSON has no -0: JSON.stringify(-0) is "0"
          if (f.inRange(Object.is(n, -0) ? 0 : n)) {
            expect(accepted(answer.statusCode)).toBe(true);
          } else {
            expect(answer.statusCode).toBe(400);
            expect(String(answer.json.error)).toContain(f.field);
            expectNothingHandedOff(ports);
          }
        },
      ),
      { numRuns: 600 },
    );
  });
});

// ---- Slack ------------------------------------------------------------------------------------------

/** Number texts as typed in Slack: what the parser must never take out of range. */
const BAD_WORDS = [
  '1e308',
  '1e-308',
  '1e400',
  'NaN',
  'Infinity',
  '-0',
  '0',
  '-1',
  '0.' + '0'.repeat(200) + '1',
  '1' + '0'.repeat(200),
  '123456789012345678901234567890',
  '10001',
  '0.0000001',
];

const COMMANDS: readonly ((w: string) => string)[] = [
  (w) => `rent RTX_4090 ${w}`,
  (w) => `rent RTX_4090 0.5 rel=${w}`,
  (w) => `rent RTX_4090 0.5 rating=${w}`,
  (w) => `rent RTX_4090 0.5 wait=${w}s`,
  (w) => `cancel ${w}`,
  (w) => `extend ${w} 2`,
  (w) => `extend 42 ${w}`,
  (w) => `bid ${w} 1540`,
  (w) => `bid 42 ${w}`,
];

/**
 * The values each argument above takes among BAD_WORDS: 0 for a filter (no filter) and for wait= (no
 * wait); 10001 as an order id, a wait in seconds or a bid; a bid of 0.0000001 (a satoshi is 0.00000001).
 */
const SLACK_ACCEPTS: Readonly<Record<number, readonly string[]>> = {
  1: ['0'],
  2: ['0'],
  3: ['0', '10001'],
  4: ['10001'],
  5: ['10001'],
  7: ['10001'],
  8: ['10001', '0.0000001'],
};

const sendSlack = async (text: string) => {
  const { ports, deps } = freshCase(CONFIG);
  const params = new URLSearchParams({ text, command: '/gpu', user_id: 'U123' });
  const body = params.toString();
  const ts = String(NOW_S - 5);
  const mac = createHmac('sha256', SLACK_SECRET).update(`v0:${ts}:${body}`).digest('hex');
  const event = buildEvent({
    method: 'POST',
    path: '/slack/command',
    eventBody: body,
    isBase64Encoded: false,
    headers: {
      'content-type': 'application/x-www-form-urlencoded',
      'x-slack-request-timestamp': ts,
      'x-slack-signature': `v0=${mac}`,
    },
    sourceIp: '203.0.113.7',
  });
  return { answer: await invoke(TARGETS.SlackCommand!.build(deps), event), ports };
};

describe('Fuzz: numeric arguments of the Slack command (issue 38 §6)', () => {
  const cases = COMMANDS.flatMap((command, index) =>
    BAD_WORDS.map((word) => [command(word), SLACK_ACCEPTS[index]?.includes(word) === true] as const),
  );
  it.each(cases)('%s → a usage reply (ephemeral), nothing queued; never 5xx', async (text, takes) => {
    const { answer, ports } = await sendSlack(text);
    expect(answer.statusCode).toBe(200);
    if (takes) return;
    expect(answer.json.response_type).toBe('ephemeral');
    expectNothingHandedOff(ports);
  });
});
