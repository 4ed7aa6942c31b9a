/**
 * The OpenAPI 3.1 description of the relay, served at GET /openapi.json.
 *
 * Bodies and answers are generated from the zod schemas the handlers validate with
 * (./requests.ts and ./response-schemas.ts, via zod 4's `z.toJSONSchema`, JSON Schema 2020-12 = OpenAPI 3.1's dialect), and the
 * operations from the route table (contract/routes.ts), so the document cannot drift from the code.
 * Pure: no environment, no clock.
 */
import * as z from 'zod/mini';
import { ROUTE_SCOPES, ROUTES } from '../../contract/routes';
import { SCOPES } from '../../contract/scopes';
import type { RouteDefinition } from '../../contract/routes';
import type { OrderEvent } from '../domain/lease';
import { REPLAY_WINDOW_SECONDS } from '../domain/signing';
import type { TaskResult } from '../domain/task';
import { TASK_ID_PATTERN } from '../domain/task-view';
import {
  CancelOrderBodySchema,
  CancelTaskBodySchema,
  CreateKeyBodySchema,
  CreateOrderLeaseBodySchema,
  describe,
  ExtendOrderBodySchema,
  PriceAlertBodySchema,
  SetSpotPriceBodySchema,
  StatusBodySchema,
} from './requests';
import {
  AcceptedSchema,
  ErrorSchema,
  HealthSchema,
  MarketplaceSummarySchema,
  SlackCommandFormSchema,
  SlackResponseSchema,
  StatusAcceptedSchema,
  TaskViewSchema,
} from './response-schemas';

type JsonObject = Record<string, unknown>;

export interface OpenApiOptions {
  /** Base URL callers use, e.g. the API Gateway endpoint. @default - no `servers` entry (same origin) */
  readonly serverUrl?: string;
  /** MAX_REQUESTS_PER_MINUTE, shown in the rate-limit description. @default 60 */
  readonly requestsPerMinute?: number;
  /** Largest accepted body in bytes, shown in the 413 description. @default 65536 */
  readonly maxBodyBytes?: number;
}

// ---- callback payloads (order-relay.md §2.3) ------------------------------------------------------
// Documented from zod schemas checked against the domain's TaskResult type below, so a change to the
// result shapes fails compilation here instead of silently leaving the document behind.

const CreateOrderSuccessSchema = describe(z.object({
  success: z.literal(true),
  order_id: z.int(),
  server_id: z.int(),
  status: z.string(),
  ssh_connection: z.string(),
  gpu: z.array(z.string()),
  price_usd: describe(z.nullable(z.number()), { description: 'Spot price of the chosen server in USD per hour' }),
  lease_expires_at: describe(z.optional(z.int()), { description: 'Leased orders only (`max_hours` or DEFAULT_MAX_HOURS): Unix seconds at which the relay cancels the order, counted from readiness' }),
}), { title: 'CreateOrderSuccess' });
const CancelSuccessSchema = describe(z.object({ success: z.literal(true), order_id: z.int(), status: z.literal('cancelled') }), { title: 'CancelSuccess' });
const CancelTaskSuccessSchema = describe(z.object({ success: z.literal(true), task_id: z.string(), state: z.literal('cancelled') }), { title: 'CancelTaskSuccess' });
const StatusResultSchema = describe(z.object({
  total_orders: z.int(),
  active: describe(z.int(), { description: 'Orders with status running' }),
  creating: describe(z.int(), { description: 'Orders with status creating_order' }),
  orders: z.array(z.object({
    order_id: z.int(),
    status: z.string(),
    ssh: z.nullable(z.string()),
    lease_expires_at: describe(z.optional(z.int()), { description: 'Leased orders only: Unix seconds at which the relay cancels the order' }),
  })),
}), { title: 'StatusResult' });
const ExtendOrderSuccessSchema = describe(z.object({
  success: z.literal(true),
  order_id: z.int(),
  lease_expires_at: describe(z.int(), { description: 'The new end of the lease (Unix seconds): max(now, previous end) + hours' }),
}), { title: 'ExtendOrderSuccess' });
const SetSpotPriceSuccessSchema = describe(z.object({
  success: z.literal(true),
  order_id: z.int(),
  desired_price: describe(z.number(), { description: 'The spot price now bid, in the marketplace\'s unit: `currency` per day' }),
  currency: describe(z.string(), { description: 'The order\'s currency' }),
  desired_price_usd_per_hour: describe(z.nullable(z.number()), { description: 'The same price in USD per hour at the server\'s rates; null when the listing does not state them' }),
}), { title: 'SetSpotPriceSuccess' });
const PriceAlertMatchedSchema = describe(z.object({
  success: z.literal(true),
  message: z.string(),
  task_id: describe(z.string(), { description: 'The create-order task the match queued' }),
}), { title: 'PriceAlertMatched' });
const PriceNotMetSchema = describe(z.object({ success: z.literal(false), message: z.string() }), { title: 'PriceNotMet' });
const FailureResultSchema = describe(z.object({ success: z.literal(false), error: z.string() }), { title: 'Failure' });

/** Every result a task can end with, as POSTed to callback_url and shown by GET /webhook/tasks/{task_id}. */
export const TaskResultSchema = z.union([
  CreateOrderSuccessSchema,
  CancelSuccessSchema,
  CancelTaskSuccessSchema,
  StatusResultSchema,
  PriceAlertMatchedSchema,
  PriceNotMetSchema,
  ExtendOrderSuccessSchema,
  SetSpotPriceSuccessSchema,
  FailureResultSchema,
]);

/** A lifecycle event of an order the relay placed (issue 14), POSTed to the placing request's callback_url. */
const OrderEventSchema = describe(z.object({
  event: describe(z.enum([
    'order.lease_expiring', 'order.lease_expired', 'order.status_changed', 'order.orphan_cancelled',
    'order.outbid', 'order.rebid', 'order.replaced', 'order.recovery_failed',
  ]), {
    description: '`order.orphan_cancelled`: an order placed for this task that the task did not keep (its answer was lost, or it showed in my_orders too late) was cancelled by the fleet watch. '
      + 'Outbid recovery (`on_outbid`, docs/outbid-recovery.md): `order.outbid` (a spot order stopped while another renter has its server), '
      + '`order.rebid` (one accepted bid raise), `order.replaced` (a new order runs instead of the lost one, which was cancelled; its `order_id` is the new order), `order.recovery_failed` (nothing more will be tried)',
  }),
  order_id: z.int(),
  task_id: describe(z.string(), { description: 'The task that placed (or first extended) the order' }),
  occurred_at: describe(z.int(), { description: 'Unix seconds' }),
  lease_expires_at: describe(z.optional(z.int()), { description: 'Lease events: the end of the lease (Unix seconds)' }),
  from: describe(z.optional(z.string()), { description: '`order.status_changed`: the previous marketplace status' }),
  to: describe(z.optional(z.string()), { description: '`order.status_changed`: the new status, or `gone` when the order left my_orders' }),
  old_price: describe(z.optional(z.number()), { description: '`order.rebid`: the bid before the raise, in the order currency per day (the marketplace\'s unit)' }),
  new_price: describe(z.optional(z.number()), { description: '`order.rebid`: the accepted new bid, same unit' }),
  currency: describe(z.optional(z.string()), { description: '`order.rebid`: the order currency' }),
  from_order_id: describe(z.optional(z.int()), { description: '`order.replaced`: the lost order (cancelled)' }),
  to_order_id: describe(z.optional(z.int()), { description: '`order.replaced`: the new order, which the lease, extend-order and set-spot-price now follow' }),
  ssh_connection: describe(z.optional(z.string()), { description: '`order.replaced`: how to reach the new order' }),
  reason: describe(z.optional(z.string()), { description: '`order.recovery_failed`: why the relay stopped trying' }),
}), { title: 'OrderEvent' });

type Mutable<T> = T extends readonly (infer U)[] ? Mutable<U>[] : T extends object ? { -readonly [K in keyof T]: Mutable<T[K]> } : T;
type Assert<T extends true> = T;
type MutuallyAssignable<A, B> = [A] extends [B] ? ([B] extends [A] ? true : false) : false;
/** Compile-time drift check: the documented results are exactly the domain's TaskResult. */
export type TaskResultSchemaMatchesDomain = Assert<MutuallyAssignable<z.infer<typeof TaskResultSchema>, Mutable<TaskResult>>>;
/** Compile-time drift check: the documented event is exactly the domain's OrderEvent. */
export type OrderEventSchemaMatchesDomain = Assert<MutuallyAssignable<z.infer<typeof OrderEventSchema>, Mutable<OrderEvent>>>;

// ---- schema conversion -------------------------------------------------------------------------

/**
 * Collects component schemas. zod emits schemas that carry a `meta({ id })` as `$defs` with
 * `#/$defs/<id>` references, which inside an OpenAPI document would resolve against the document
 * root; they are hoisted into `components.schemas` and the references rewritten.
 */
class SchemaComponents {
  public readonly schemas: Record<string, JsonObject> = {};
  private readonly raw = new Map<string, string>();

  /** Converts a zod schema; named ones become a component and come back as a `$ref`. */
  public convert(schema: z.core.$ZodType, io: 'input' | 'output', name?: string): JsonObject {
    const json = z.toJSONSchema(schema, { target: 'draft-2020-12', io }) as JsonObject;
    const { $schema: _dialect, $defs, ...root } = json;
    const renames = new Map<string, string>();
    for (const [id, def] of Object.entries(($defs ?? {}) as Record<string, JsonObject>)) {
      renames.set(id, this.nameFor(id, def, io));
    }
    for (const [id, def] of Object.entries(($defs ?? {}) as Record<string, JsonObject>)) {
      this.schemas[renames.get(id) as string] = rewriteRefs(def, renames) as JsonObject;
    }
    const converted = rewriteRefs(root, renames) as JsonObject;
    if (!name || isRefOnly(converted)) return converted;
    const finalName = this.nameFor(name, root, io);
    this.schemas[finalName] = converted;
    return ref(finalName);
  }

  /** The component name for `name`: reused when the content is the same, suffixed when input and output differ. */
  private nameFor(name: string, content: JsonObject, io: 'input' | 'output'): string {
    const text = JSON.stringify(content);
    for (const candidate of [name, `${name}${io === 'input' ? 'Input' : 'Output'}`]) {
      const known = this.raw.get(candidate);
      if (known === undefined) {
        this.raw.set(candidate, text);
        return candidate;
      }
      if (known === text) return candidate;
    }
    throw new Error(`openapi: two different schemas are both named ${name}`);
  }
}

const ref = (name: string): JsonObject => ({ $ref: `#/components/schemas/${name}` });
const isRefOnly = (schema: JsonObject): boolean => Object.keys(schema).length === 1 && typeof schema.$ref === 'string';

const rewriteRefs = (value: unknown, renames: ReadonlyMap<string, string>): unknown => {
  if (Array.isArray(value)) return value.map((v) => rewriteRefs(v, renames));
  if (value === null || typeof value !== 'object') return value;
  return Object.fromEntries(
    Object.entries(value).map(([key, v]) => {
      if (key === '$ref' && typeof v === 'string' && v.startsWith('#/$defs/')) {
        const id = v.slice('#/$defs/'.length);
        return [key, `#/components/schemas/${renames.get(id) ?? id}`];
      }
      return [key, rewriteRefs(v, renames)];
    }),
  );
};

// ---- document ----------------------------------------------------------------------------------

const json = (schema: JsonObject, example?: unknown): JsonObject => ({
  'application/json': { schema, ...(example !== undefined ? { example } : {}) },
});
const errorResponse = (description: string, example: string, headers?: JsonObject): JsonObject => ({
  description,
  ...(headers ? { headers } : {}),
  content: json({ $ref: '#/components/schemas/Error' }, { error: example }),
});
const responseRef = (name: string): JsonObject => ({ $ref: `#/components/responses/${name}` });

interface OperationDoc {
  readonly operationId: string;
  readonly tag: 'Tasks' | 'Read' | 'Slack' | 'Service' | 'Admin';
  readonly summary: string;
  readonly description?: string;
  readonly requestBody?: JsonObject;
  /** 2xx answers; the error answers are added from the route's flags. */
  readonly success: Record<string, JsonObject>;
  readonly extraErrors?: readonly string[];
  readonly parameters?: readonly JsonObject[];
  readonly callback?: boolean;
  /** Lifecycle events of the order go to this request's callback_url too. */
  readonly orderEvents?: boolean;
}

const SIGNING_DESCRIPTION = `Every signed route requires \`X-Webhook-Signature\`: the lowercase hex HMAC-SHA256 of the raw request body, keyed with the shared webhook secret.

* With \`X-Webhook-Timestamp\` (Unix seconds) the signed bytes are \`<timestamp>.<body>\`, and a timestamp more than ${REPLAY_WINDOW_SECONDS} s from the relay's clock is refused (replay window). The relay may be configured to require it.
* Bodiless signed GETs (\`/webhook/tasks/{task_id}\`) sign the request path with its query string instead of a body, e.g. \`<timestamp>./webhook/tasks/6f1c…\`.
* Sign the exact bytes you send.
* One signed request, one task: a timestamped signed POST sent again (same route, timestamp and signature) while its timestamp is accepted gets 202 with the first request's \`task_id\` and \`Idempotent-Replayed: true\`, and queues nothing.

Missing signature: 401 \`Missing signature\`; wrong signature: 401 \`Invalid signature\`. The rate limit is checked before the signature.

Caller keys: with \`X-Webhook-Key-Id: <name>\` the request is signed with that key's secret instead (same bytes, same rules). An unknown, revoked or expired key answers 401 \`Invalid signature\` (no hint which); a key without the route's scope (${SCOPES.map((s) => `\`${s}\``).join(', ')}) answers 403 \`key <name> may not <scope>\` and nothing is queued. Without the header the shared secret acts as the \`default\` key with every scope.`;

const ORDER_EVENTS_DESCRIPTION = `Besides its one task result, an order the relay placed (or whose lease a request created) reports lifecycle events to the callback_url of the request that placed it: \`order.lease_expiring\` (LEASE_WARNING_SECONDS before the lease ends), \`order.lease_expired\` (the relay cancelled it), \`order.status_changed\` (\`from\` → \`to\`). Signed and retried exactly like result callbacks; \`webhook-id\` is unique per event and the same on every retry. Each event is delivered once.`;

const CALLBACK_DESCRIPTION = `When the request has \`callback_url\`, the task's result is POSTed there as JSON once the task ends (success or failure), signed per Standard Webhooks (https://www.standardwebhooks.com) with the relay's callback signing secret (\`whsec_…\`), which is never the webhook secret, so a delivery can never be replayed as a request: \`webhook-signature\` = \`v1,\` + base64 HMAC-SHA256 of \`<webhook-id>.<webhook-timestamp>.<body>\`. Verify it with a Standard Webhooks library. \`webhook-id\` is the same on every retry of the delivery, so a receiver can drop duplicates. Deliveries time out after 10 s and are retried with backoff on 5xx, 429 and timeouts, never on other 4xx or redirects.`;

/**
 * Builds the OpenAPI 3.1 document of every route in `ROUTES`. Throws when a route has no operation
 * description, so a new route cannot be served undocumented.
 */
export const buildOpenApiDocument = (opts: OpenApiOptions = {}): JsonObject => {
  const perMinute = opts.requestsPerMinute ?? 60;
  const maxBody = opts.maxBodyBytes ?? 64 * 1024;
  const components = new SchemaComponents();
  // Register Error first so every error answer shares one component.
  components.convert(ErrorSchema, 'output', 'Error');
  const taskResult = components.convert(TaskResultSchema, 'output', 'TaskResult');
  const orderEvent = components.convert(OrderEventSchema, 'output', 'OrderEvent');
  const accepted = (example: JsonObject) => ({ '202': { description: 'Queued; the work runs in the background.', content: json(components.convert(AcceptedSchema, 'output', 'Accepted'), example) } });
  const body = (schema: z.core.$ZodType, name: string, example: JsonObject, required = true): JsonObject => ({
    required,
    content: json(components.convert(schema, 'input', name), example),
  });

  const operations: Record<string, OperationDoc> = {
    'POST /webhook/create-order': {
      operationId: 'createOrder',
      tag: 'Tasks',
      summary: 'Rent the first matching server',
      description: 'Queues a create-order task: search servers matching `gpu_type` (under `max_price` when given, USD per hour: compared with the spot price, or the on-demand price in the order currency, in USD per hour), bid (spot: 1.1 × spot price in the order currency, the marketplace\'s unit), place the order, wait up to 120 s for it to run (cancelled on timeout), and report the result. 400 `gpu_type required` when `gpu_type` is missing.\n\nWith `max_hours` (or the relay\'s DEFAULT_MAX_HOURS when absent) the order is leased: servers whose maximum rental time is shorter are skipped, the success result adds `lease_expires_at` (Unix seconds, counted from readiness), and the relay cancels the order when the lease ends. 400 `max_hours must be a number between 0 and 720` for an invalid `max_hours`. Every placed order is watched: lifecycle events go to `callback_url` (see the `orderEvent` callback).',
      requestBody: body(CreateOrderLeaseBodySchema, 'CreateOrderRequest', { gpu_type: 'RTX 4090', max_price: 0.5, max_hours: 4, callback_url: 'https://ci.example.com/gpu-callback' }),
      success: accepted({ status: 'queued', task_id: '6f1c0b1e-8a57-4f0e-9b38-0d6c2f4c9a11', message: 'Order creation queued' }),
      callback: true,
      orderEvents: true,
    },
    'POST /webhook/extend-order': {
      operationId: 'extendOrder',
      tag: 'Tasks',
      summary: 'Extend an order\'s lease',
      description: 'Queues an extend-order task: the lease ends at max(now, current end) + `hours`; an order without a lease gets one (and is watched from then on). Result `{success: true, order_id, lease_expires_at}`, or the failure `order <id> is not active` when my_orders does not list it as active. 400 `order_id and hours required` when either is missing; `hours must be a number between 0 and 720` when `hours` is invalid.',
      requestBody: body(ExtendOrderBodySchema, 'ExtendOrderRequest', { order_id: 123456, hours: 2 }),
      success: accepted({ status: 'queued', task_id: '5d4c3b2a-1f0e-4d9c-8b7a-6f5e4d3c2b1a', message: 'Extension of order 123456 by 2 h queued' }),
      callback: true,
      orderEvents: true,
    },
    'POST /webhook/set-spot-price': {
      operationId: 'setSpotPrice',
      tag: 'Tasks',
      summary: 'Change a spot order\'s bid',
      description: 'Queues a set-spot-price task. `desired_price` is in the marketplace\'s own unit, the order\'s currency per day (what the marketplace bids in), not USD per hour. Result `{success: true, order_id, desired_price, currency, desired_price_usd_per_hour}`, or a failure naming the marketplace\'s reason (`too_low_price`, `can_lower_every_600_seconds`, `exceeded_max_step`, …). The relay itself refuses, without a marketplace call, a decrease within 600 s of its previous decrease on the order, and a raise to more than 10 × the order\'s current price (a likely unit mistake). 400 `order_id and desired_price required` when either is missing; `desired_price must be a positive number` when it is not one; `desired_price must be between 0.00000001 and 10000000 (order currency per day)` outside that range.',
      requestBody: body(SetSpotPriceBodySchema, 'SetSpotPriceRequest', { order_id: 123456, desired_price: 12.5 }),
      success: accepted({ status: 'queued', task_id: '7e6d5c4b-3a2f-4e1d-9c8b-7a6f5e4d3c2b', message: 'Spot price change of order 123456 to 12.5 queued' }),
      callback: true,
    },
    'POST /webhook/cancel-order': {
      operationId: 'cancelOrder',
      tag: 'Tasks',
      summary: 'Cancel an order',
      description: 'Queues a cancel task. 400 `order_id required` when `order_id` is missing or falsy.',
      requestBody: body(CancelOrderBodySchema, 'CancelOrderRequest', { order_id: 123456 }),
      success: accepted({ status: 'queued', task_id: '0b4f2d6e-1c3a-4e5f-8a9b-7c6d5e4f3a21', message: 'Order cancellation queued' }),
      callback: true,
    },
    'POST /webhook/cancel-task': {
      operationId: 'cancelTask',
      tag: 'Tasks',
      summary: 'End a waiting standing order',
      description: 'Queues a cancel-task task (issue 23). A create-order task that is `waiting` for a server (a standing order, `wait_seconds`) ends with the failure `cancelled while waiting for a server`, delivered to its own callback_url; this task\'s result is `{success: true, task_id, state: "cancelled"}`. A task that is not waiting (running, finished, unknown) is left alone and the result is a failure `task <id> is not waiting`. 400 `task_id required` / `Invalid task_id`.',
      requestBody: body(CancelTaskBodySchema, 'CancelTaskRequest', { task_id: '5f2c1b0a-9e8d-4c7b-a6f5-e4d3c2b1a098' }),
      success: accepted({ status: 'queued', task_id: '1a2b3c4d-5e6f-4a7b-8c9d-0e1f2a3b4c5d', message: 'Cancellation of task 5f2c1b0a-9e8d-4c7b-a6f5-e4d3c2b1a098 queued' }),
      callback: true,
    },
    'POST /webhook/price-alert': {
      operationId: 'priceAlert',
      tag: 'Tasks',
      summary: 'Check once for a server at or under a price',
      description: 'A single check, not a recurring watch: when a server matches at or under `target_price` (USD per hour, compared with its spot price in USD per hour), a chat notification is sent and a create-order task (spot, `max_price` = `target_price`) is queued; otherwise the result is `Price not met`. 400 `gpu_type and target_price required` when either is missing.',
      requestBody: body(PriceAlertBodySchema, 'PriceAlertRequest', { gpu_type: 'A100', target_price: 1.2 }),
      success: accepted({ status: 'queued', task_id: '9a8b7c6d-5e4f-4a3b-8c2d-1e0f9a8b7c6d', message: 'Price alert queued' }),
      callback: true,
    },
    'POST /webhook/status': {
      operationId: 'status',
      tag: 'Tasks',
      summary: 'List the account\'s orders',
      description: 'Queues a status task that lists every order of the account. The body is optional.',
      requestBody: body(StatusBodySchema, 'StatusRequest', {}, false),
      success: { '202': { description: 'Queued.', content: json(components.convert(StatusAcceptedSchema, 'output', 'StatusAccepted'), { status: 'queued', task_id: '3c2b1a09-8f7e-4d6c-9b5a-4f3e2d1c0b9a' }) } },
      callback: true,
    },
    'GET /webhook/tasks/{task_id}': {
      operationId: 'getTask',
      tag: 'Tasks',
      summary: 'Look up a task: state, result and timestamps',
      description: 'Signed like the other routes; having no body, the signature covers the request path (with its query string), prefixed by `<timestamp>.` when `X-Webhook-Timestamp` is sent.',
      parameters: [{ $ref: '#/components/parameters/TaskId' }],
      success: { '200': { description: 'The task record.', content: json(components.convert(TaskViewSchema, 'output', 'TaskView')) } },
      extraErrors: ['404'],
    },
    'GET /webhook/marketplace': {
      operationId: 'marketplaceSummary',
      tag: 'Read',
      summary: 'GPU availability and prices',
      description: 'Groups servers by the first word of their first GPU name; `min_price` is USD per hour, whatever period the marketplace prices in. Unsigned, rate limited.',
      success: {
        '200': {
          description: 'Summary of the marketplace.',
          content: json(components.convert(MarketplaceSummarySchema, 'output', 'MarketplaceSummary'), {
            status: 'ok', summary: { NVIDIA: { available: 12, total: 20, min_price: 0.21 } }, total_servers: 20, total_available: 12,
          }),
        },
      },
    },
    'POST /slack/command': {
      operationId: 'slackCommand',
      tag: 'Slack',
      summary: 'Slack slash command: rent, cancel, status, extend, bid',
      description: '`text` is split on whitespace; the first word is the subcommand: `rent <gpu_type> [max_price]` (`_` stands for a space: `rent RTX_4090 0.5`), `cancel <order_id>`, `status`, `extend <order_id> <hours>` (extend-order), `bid <order_id> <price>` (set-spot-price; the price in the order currency per day). Anything else answers `ephemeral` usage. When a Slack signing secret is configured, `X-Slack-Signature` (v0, 5-minute window) is verified; without one, commands are refused with 403 unless the operator allowed unsigned commands (`ALLOW_UNSIGNED_SLACK`, the local default; off when deployed).',
      parameters: [{ $ref: '#/components/parameters/SlackSignature' }, { $ref: '#/components/parameters/SlackRequestTimestamp' }],
      requestBody: {
        required: true,
        content: { 'application/x-www-form-urlencoded': { schema: components.convert(SlackCommandFormSchema, 'input', 'SlackCommandForm'), example: { text: 'rent 4090 0.5' } } },
      },
      success: { '200': { description: 'Slack message.', content: json(components.convert(SlackResponseSchema, 'output', 'SlackResponse'), { response_type: 'in_channel', text: 'Queued order for 4090' }) } },
      extraErrors: ['401', '403'],
    },
    'POST /admin/keys': {
      operationId: 'createKey',
      tag: 'Admin',
      summary: 'Create a caller key (scope admin); its secret is in this answer only',
      requestBody: {
        required: true,
        content: json(components.convert(CreateKeyBodySchema, 'input', 'CreateKeyBody'), { name: 'ci', scopes: ['order', 'cancel', 'read'], orders_per_hour: 5, budget_usd_per_day: 20, expires: '2027-01-31' }),
      },
      success: { '201': { description: 'The key with its secret (`rk_…`), shown once.', content: json({ type: 'object' }, { name: 'ci', scopes: ['order', 'cancel', 'read'], status: 'active', secret: 'rk_…' }) } },
      extraErrors: ['409'],
    },
    'GET /admin/keys': {
      operationId: 'listKeys',
      tag: 'Admin',
      summary: 'List caller keys (scope admin); never a secret',
      success: { '200': { description: 'Every key, revoked and expired ones included.', content: json({ type: 'object' }, { keys: [{ name: 'ci', scopes: ['order'], status: 'active' }] }) } },
    },
    'POST /admin/keys/{name}/revoke': {
      operationId: 'revokeKey',
      tag: 'Admin',
      summary: 'Revoke a caller key (scope admin); refused everywhere within CALLER_KEY_CACHE_SECONDS (≤ 60 s)',
      parameters: [{ name: 'name', in: 'path', required: true, schema: { type: 'string', pattern: '^[a-z0-9][a-z0-9_-]{0,63}$' } }],
      success: { '200': { description: 'Revoked (`already: true` when it was before).', content: json({ type: 'object' }, { name: 'ci', status: 'revoked' }) } },
      extraErrors: ['404'],
    },
    'GET /health': {
      operationId: 'health',
      tag: 'Service',
      summary: 'Liveness check',
      success: { '200': { description: 'The relay is up.', content: json(components.convert(HealthSchema, 'output', 'Health'), { status: 'ok' }) } },
    },
    'GET /openapi.json': {
      operationId: 'openApi',
      tag: 'Service',
      summary: 'This document',
      success: { '200': { description: 'OpenAPI 3.1 document.', content: json({ type: 'object' }) } },
    },
  };

  const paths: Record<string, Record<string, JsonObject>> = {};
  for (const route of ROUTES) {
    const key = `${route.method} ${route.path}`;
    const doc = operations[key];
    if (!doc) throw new Error(`openapi: no operation documented for ${key}`);
    (paths[route.path] ??= {})[route.method.toLowerCase()] = operation(route, doc, taskResult, orderEvent);
  }
  const undocumented = Object.keys(operations).filter((key) => !ROUTES.some((r) => `${r.method} ${r.path}` === key));
  if (undocumented.length > 0) throw new Error(`openapi: operations for unknown routes: ${undocumented.join(', ')}`);

  return {
    openapi: '3.1.0',
    info: {
      title: 'GPU Order Relay',
      version: '0.1.0',
      summary: 'Signed-webhook relay that rents GPU servers on a rental marketplace.',
      description: `Action requests answer at once with a \`task_id\`; the work runs in the background and its result goes to \`callback_url\` and can be looked up at \`GET /webhook/tasks/{task_id}\`.\n\n## Signing\n\n${SIGNING_DESCRIPTION}\n\n## Callbacks\n\n${CALLBACK_DESCRIPTION}\n\n## Order events\n\n${ORDER_EVENTS_DESCRIPTION}\n\n## Rate limit\n\n${perMinute} requests per rolling 60 s per client address on the signed task routes, the task lookup and \`/webhook/marketplace\`. Every request counts, including ones that fail the signature check. Over the limit: 429 \`Rate limit exceeded\` with \`Retry-After\` (seconds).`,
      license: { name: 'Apache-2.0', identifier: 'Apache-2.0' },
    },
    ...(opts.serverUrl ? { servers: [{ url: opts.serverUrl }] } : {}),
    tags: [
      { name: 'Tasks', description: 'Signed routes that queue work or look it up.' },
      { name: 'Read', description: 'Unsigned reads.' },
      { name: 'Slack', description: 'Slack slash command.' },
      { name: 'Service', description: 'Health and this description.' },
      { name: 'Admin', description: 'Caller keys (scope admin).' },
    ],
    paths,
    components: {
      schemas: components.schemas,
      securitySchemes: {
        webhookSignature: {
          type: 'apiKey',
          in: 'header',
          name: 'X-Webhook-Signature',
          description: SIGNING_DESCRIPTION,
        },
      },
      parameters: {
        WebhookTimestamp: {
          name: 'X-Webhook-Timestamp',
          in: 'header',
          required: false,
          description: `Unix seconds. When present the signature covers \`<timestamp>.<body>\` (or \`<timestamp>.<path>\`), and the request is refused with 401 when the timestamp is more than ${REPLAY_WINDOW_SECONDS} s from the relay's clock. Required when the relay runs with REQUIRE_WEBHOOK_TIMESTAMP=true.`,
          schema: { type: 'string', pattern: '^\\d{1,12}$' },
          example: '1767225600',
        },
        WebhookKeyId: {
          name: 'X-Webhook-Key-Id',
          in: 'header',
          required: false,
          description: 'The caller key whose secret signed the request; absent = the shared webhook secret (the `default` key, every scope).',
          schema: { type: 'string', pattern: '^[a-z0-9][a-z0-9_-]{0,63}$' },
          example: 'ci',
        },
        IdempotencyKey: {
          name: 'Idempotency-Key',
          in: 'header',
          required: false,
          description: 'A repeat of a signed POST with the same key within 24 h returns the first request\'s task_id and starts nothing.',
          schema: { type: 'string', minLength: 1 },
          example: 'deploy-2024-06-01-build-381',
        },
        TaskId: {
          name: 'task_id',
          in: 'path',
          required: true,
          description: 'The task_id a signed POST returned.',
          schema: { type: 'string', pattern: TASK_ID_PATTERN.source },
        },
        SlackSignature: {
          name: 'X-Slack-Signature',
          in: 'header',
          required: false,
          description: 'Slack request signature (v0); verified when the relay has a Slack signing secret.',
          schema: { type: 'string' },
        },
        SlackRequestTimestamp: {
          name: 'X-Slack-Request-Timestamp',
          in: 'header',
          required: false,
          description: 'Slack request timestamp; must be within 5 minutes when Slack verification is on.',
          schema: { type: 'string' },
        },
      },
      headers: {
        RetryAfter: { description: 'Seconds to wait before retrying.', schema: { type: 'integer', minimum: 0 } },
      },
      responses: {
        BadRequest: errorResponse('Missing or invalid field, or a body that is not JSON. The spec\'s exact messages are kept (e.g. `gpu_type required`).', 'gpu_type required'),
        Unauthorized: errorResponse('Missing or invalid signature, or a stale timestamp.', 'Invalid signature'),
        Forbidden: errorResponse('Slack commands are refused: no Slack signing secret is configured and unsigned commands are not allowed.', 'Slack commands are disabled: this relay has no Slack signing secret configured'),
        NotFound: errorResponse('No task with this id.', 'Task not found'),
        MissingScope: errorResponse('The caller key lacks the route\'s scope; nothing was queued.', 'key ci may not cancel'),
        Conflict: errorResponse('A key of this name exists (names are never reused).', 'key ci exists (names are never reused, even revoked)'),
        PayloadTooLarge: errorResponse(`Body larger than ${maxBody} bytes.`, `Request body too large (max ${maxBody} bytes)`),
        TooManyRequests: errorResponse(`More than ${perMinute} requests from one client address within 60 s.`, 'Rate limit exceeded', { 'Retry-After': { $ref: '#/components/headers/RetryAfter' } }),
        InternalError: errorResponse('Unexpected failure (for the marketplace summary: the marketplace could not be read).', 'Internal server error'),
        Unavailable: errorResponse('A dependency (secret store, rate-limit store, queue or workflow) is unavailable; retry later.', 'Service unavailable; retry later', { 'Retry-After': { $ref: '#/components/headers/RetryAfter' } }),
      },
    },
  };
};

const ERROR_RESPONSES: Record<string, string> = {
  '400': 'BadRequest',
  '401': 'Unauthorized',
  '403': 'Forbidden',
  '404': 'NotFound',
  '409': 'Conflict',
  '413': 'PayloadTooLarge',
  '429': 'TooManyRequests',
  '500': 'InternalError',
  '503': 'Unavailable',
};

/** One operation: the route's flags decide security, headers and which error answers apply. */
const operation = (route: RouteDefinition, doc: OperationDoc, taskResult: JsonObject, orderEvent: JsonObject): JsonObject => {
  const errors = new Set<string>(doc.extraErrors ?? []);
  if (doc.requestBody) errors.add('400').add('413');
  if (route.signed) errors.add('401').add('503');
  if (route.rateLimited) errors.add('429').add('503');
  if (route.path !== '/health' && route.path !== '/openapi.json') errors.add('500');
  if (doc.callback) errors.add('503'); // the hand-off to the queue or the workflow failed

  const parameters: JsonObject[] = [...(doc.parameters ?? [])];
  if (route.signed) parameters.push({ $ref: '#/components/parameters/WebhookTimestamp' }, { $ref: '#/components/parameters/WebhookKeyId' });
  if (route.signed && route.method === 'POST') parameters.push({ $ref: '#/components/parameters/IdempotencyKey' });

  const responses: Record<string, JsonObject> = { ...doc.success };
  for (const status of [...errors].sort()) responses[status] = responseRef(ERROR_RESPONSES[status]);
  if (ROUTE_SCOPES[route.id] !== undefined) responses['403'] = responseRef('MissingScope');

  return {
    operationId: doc.operationId,
    tags: [doc.tag],
    summary: doc.summary,
    ...(doc.description ? { description: doc.description } : {}),
    security: route.signed ? [{ webhookSignature: [] }] : [],
    ...(parameters.length ? { parameters } : {}),
    ...(doc.requestBody ? { requestBody: doc.requestBody } : {}),
    responses,
    ...(doc.callback ? { callbacks: { taskResult: taskResultCallback(taskResult), ...(doc.orderEvents ? { orderEvent: orderEventCallback(orderEvent) } : {}) } } : {}),
    'x-rate-limited': route.rateLimited,
  };
};

/** The Standard Webhooks headers of a delivery (results and events alike). */
const deliveryHeaders = (idDescription: string): JsonObject[] => [
  { name: 'webhook-id', in: 'header', required: true, schema: { type: 'string' }, description: idDescription },
  { name: 'webhook-timestamp', in: 'header', required: true, schema: { type: 'string', pattern: '^\\d{1,12}$' }, description: 'Unix seconds when this attempt was signed; reject it when more than 5 minutes from your clock.' },
  {
    name: 'webhook-signature', in: 'header', required: true, schema: { type: 'string', pattern: '^v1,[A-Za-z0-9+/]+=*( v1,[A-Za-z0-9+/]+=*)*$' },
    description: '`v1,<base64 HMAC-SHA256 of "<webhook-id>.<webhook-timestamp>.<body>">` keyed with the callback signing secret (`whsec_…`, never the webhook secret), one per active key, space-separated.',
  },
];

const orderEventCallback = (orderEvent: JsonObject): JsonObject => ({
  '{$request.body#/callback_url}': {
    post: {
      summary: 'A lifecycle event of the order, POSTed to callback_url',
      description: ORDER_EVENTS_DESCRIPTION,
      parameters: deliveryHeaders('Unique per event, the same on every retry of its delivery.'),
      requestBody: { required: true, content: json(orderEvent, { event: 'order.lease_expired', order_id: 123456, task_id: '6f1c0b1e-8a57-4f0e-9b38-0d6c2f4c9a11', occurred_at: 1767229200, lease_expires_at: 1767229180 }) },
      responses: {
        '2XX': { description: 'Delivered.' },
        '5XX': { description: 'Retried with backoff.' },
      },
    },
  },
});

const taskResultCallback = (taskResult: JsonObject): JsonObject => ({
  '{$request.body#/callback_url}': {
    post: {
      summary: 'The task\'s result, POSTed to callback_url',
      description: CALLBACK_DESCRIPTION,
      parameters: deliveryHeaders('Unique per task result, the same on every retry of the delivery.'),
      requestBody: { required: true, content: json(taskResult) },
      responses: {
        '2XX': { description: 'Delivered.' },
        '5XX': { description: 'Retried with backoff.' },
      },
    },
  },
});
