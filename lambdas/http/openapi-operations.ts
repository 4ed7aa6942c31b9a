/**
 * The operation of every route in the OpenAPI document (openapi-document.ts): summary, description,
 * body and success answers. The error answers, security and callbacks come from the route's flags.
 */
import type * as z from 'zod/mini';
import {
  CancelOrderBodySchema,
  CancelTaskBodySchema,
  AvoidHostBodySchema,
  CreateKeyBodySchema,
  SshKeyBodySchema,
  CreateOrderLeaseBodySchema,
  ExtendOrderBodySchema,
  PriceAlertBodySchema,
  SetSpotPriceBodySchema,
  StatusBodySchema,
} from './requests';
import {
  AcceptedSchema,
  HealthSchema,
  MarketplaceSummarySchema,
  SlackCommandFormSchema,
  SlackResponseSchema,
  StatusAcceptedSchema,
  TaskViewSchema,
} from './response-schemas';
import { json, type JsonObject, type SchemaComponents } from './schema-components';

export interface OperationDoc {
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

/** The path parameter of the /admin/keys/{name} routes. */
const KEY_NAME_PARAMETER: JsonObject = {
  name: 'name',
  in: 'path',
  required: true,
  schema: { type: 'string', pattern: '^[a-z0-9][a-z0-9_-]{0,63}$' },
};

/** The path parameter of the /admin/hosts/{server_id} routes. */
const SERVER_ID_PARAMETER: JsonObject = {
  name: 'server_id',
  in: 'path',
  required: true,
  schema: { type: 'integer', minimum: 1 },
};

/** Every route's operation by `METHOD path`; buildOpenApiDocument checks they match ROUTES one to one. */
export const operationDocs = (components: SchemaComponents): Record<string, OperationDoc> => {
  const accepted = (example: JsonObject) => ({
    '202': {
      description: 'Queued; the work runs in the background.',
      content: json(components.convert(AcceptedSchema, 'output', 'Accepted'), example),
    },
  });
  const body = (schema: z.core.$ZodType, name: string, example: JsonObject, required = true): JsonObject => ({
    required,
    content: json(components.convert(schema, 'input', name), example),
  });

  return {
    'POST /webhook/create-order': {
      operationId: 'createOrder',
      tag: 'Tasks',
      summary: 'Rent the first matching server',
      description:
        "Queues a create-order task: search servers matching `gpu_type` (under `max_price` when given, USD per hour: compared with the spot price, or the on-demand price in the order currency, in USD per hour), bid (spot: 1.1 × spot price in the order currency, the marketplace's unit), place the order, wait up to 120 s for it to run (cancelled on timeout), and report the result. 400 `gpu_type required` when `gpu_type` is missing.\n\nWith `max_hours` (or the relay's DEFAULT_MAX_HOURS when absent) the order is leased: servers whose maximum rental time is shorter are skipped, the success result adds `lease_expires_at` (Unix seconds, counted from readiness), and the relay cancels the order when the lease ends. 400 `max_hours must be a number between 0 and 720` for an invalid `max_hours`. Every placed order is watched: lifecycle events go to `callback_url` (see the `orderEvent` callback).\n\nUnder a spending budget (SPEND_LIMIT_USD_PER_DAY, or the caller key's `budget_usd_per_day`) a request with neither `max_hours` nor DEFAULT_MAX_HOURS gets 400 `max_hours required under a budget` and nothing is queued; before create_order the worst case (USD per hour × lease hours) is reserved for the UTC day, and an order that does not fit fails with `budget exceeded: $<used> of $<limit> today` (docs/budgets.md).",
      requestBody: body(CreateOrderLeaseBodySchema, 'CreateOrderRequest', {
        gpu_type: 'RTX 4090',
        max_price: 0.5,
        max_hours: 4,
        callback_url: 'https://ci.example.com/gpu-callback',
      }),
      success: accepted({
        status: 'queued',
        task_id: '6f1c0b1e-8a57-4f0e-9b38-0d6c2f4c9a11',
        message: 'Order creation queued',
      }),
      callback: true,
      orderEvents: true,
    },
    'POST /webhook/extend-order': {
      operationId: 'extendOrder',
      tag: 'Tasks',
      summary: "Extend an order's lease",
      description:
        'Queues an extend-order task: the lease ends at max(now, current end) + `hours`; an order without a lease gets one (and is watched from then on). Result `{success: true, order_id, lease_expires_at}`, or the failure `order <id> is not active` when my_orders does not list it as active. 400 `order_id and hours required` when either is missing; `hours must be a number between 0 and 720` when `hours` is invalid.',
      requestBody: body(ExtendOrderBodySchema, 'ExtendOrderRequest', { order_id: 123456, hours: 2 }),
      success: accepted({
        status: 'queued',
        task_id: '5d4c3b2a-1f0e-4d9c-8b7a-6f5e4d3c2b1a',
        message: 'Extension of order 123456 by 2 h queued',
      }),
      callback: true,
      orderEvents: true,
    },
    'POST /webhook/set-spot-price': {
      operationId: 'setSpotPrice',
      tag: 'Tasks',
      summary: "Change a spot order's bid",
      description:
        "Queues a set-spot-price task. `desired_price` is in the marketplace's own unit, the order's currency per day (what the marketplace bids in), not USD per hour. Result `{success: true, order_id, desired_price, currency, desired_price_usd_per_hour}`, or a failure naming the marketplace's reason (`too_low_price`, `can_lower_every_600_seconds`, `exceeded_max_step`, …). The relay itself refuses, without a marketplace call, a decrease within 600 s of its previous decrease on the order, and a raise to more than 10 × the order's current price (a likely unit mistake). 400 `order_id and desired_price required` when either is missing; `desired_price must be a positive number` when it is not one; `desired_price must be between 0.00000001 and 10000000 (order currency per day)` outside that range.",
      requestBody: body(SetSpotPriceBodySchema, 'SetSpotPriceRequest', { order_id: 123456, desired_price: 12.5 }),
      success: accepted({
        status: 'queued',
        task_id: '7e6d5c4b-3a2f-4e1d-9c8b-7a6f5e4d3c2b',
        message: 'Spot price change of order 123456 to 12.5 queued',
      }),
      callback: true,
    },
    'POST /webhook/cancel-order': {
      operationId: 'cancelOrder',
      tag: 'Tasks',
      summary: 'Cancel an order',
      description: 'Queues a cancel task. 400 `order_id required` when `order_id` is missing or falsy.',
      requestBody: body(CancelOrderBodySchema, 'CancelOrderRequest', { order_id: 123456 }),
      success: accepted({
        status: 'queued',
        task_id: '0b4f2d6e-1c3a-4e5f-8a9b-7c6d5e4f3a21',
        message: 'Order cancellation queued',
      }),
      callback: true,
    },
    'POST /webhook/cancel-task': {
      operationId: 'cancelTask',
      tag: 'Tasks',
      summary: 'End a waiting standing order',
      description:
        'Queues a cancel-task task (issue 23). A create-order task that is `waiting` for a server (a standing order, `wait_seconds`) ends with the failure `cancelled while waiting for a server`, delivered to its own callback_url; this task\'s result is `{success: true, task_id, state: "cancelled"}`. A task that is not waiting (running, finished, unknown) is left alone and the result is a failure `task <id> is not waiting`. Scope `cancel`; a caller key that does not see every order may end only its own tasks (else the failure `task <id> is not a task of key <name>`, nothing changed). 400 `task_id required` / `Invalid task_id`.',
      requestBody: body(CancelTaskBodySchema, 'CancelTaskRequest', { task_id: '5f2c1b0a-9e8d-4c7b-a6f5-e4d3c2b1a098' }),
      success: accepted({
        status: 'queued',
        task_id: '1a2b3c4d-5e6f-4a7b-8c9d-0e1f2a3b4c5d',
        message: 'Cancellation of task 5f2c1b0a-9e8d-4c7b-a6f5-e4d3c2b1a098 queued',
      }),
      callback: true,
    },
    'POST /webhook/price-alert': {
      operationId: 'priceAlert',
      tag: 'Tasks',
      summary: 'Check once for a server at or under a price',
      description:
        'A single check, not a recurring watch: when a server matches at or under `target_price` (USD per hour, compared with its spot price in USD per hour), a chat notification is sent and a create-order task (spot, `max_price` = `target_price`) is queued; otherwise the result is `Price not met`. 400 `gpu_type and target_price required` when either is missing.',
      requestBody: body(PriceAlertBodySchema, 'PriceAlertRequest', { gpu_type: 'A100', target_price: 1.2 }),
      success: accepted({
        status: 'queued',
        task_id: '9a8b7c6d-5e4f-4a3b-8c2d-1e0f9a8b7c6d',
        message: 'Price alert queued',
      }),
      callback: true,
    },
    'POST /webhook/status': {
      operationId: 'status',
      tag: 'Tasks',
      summary: "List the account's orders",
      description: 'Queues a status task that lists every order of the account. The body is optional.',
      requestBody: body(StatusBodySchema, 'StatusRequest', {}, false),
      success: {
        '202': {
          description: 'Queued.',
          content: json(components.convert(StatusAcceptedSchema, 'output', 'StatusAccepted'), {
            status: 'queued',
            task_id: '3c2b1a09-8f7e-4d6c-9b5a-4f3e2d1c0b9a',
          }),
        },
      },
      callback: true,
    },
    'GET /webhook/tasks/{task_id}': {
      operationId: 'getTask',
      tag: 'Tasks',
      summary: 'Look up a task: state, result and timestamps',
      description:
        'Signed like the other routes (v2: `v2.<timestamp>.GET.<path with query>.` with an empty body; v1 where allowed: the request path with its query string, prefixed by `<timestamp>.` when `X-Webhook-Timestamp` is sent).',
      parameters: [{ $ref: '#/components/parameters/TaskId' }],
      success: {
        '200': {
          description: 'The task record.',
          content: json(components.convert(TaskViewSchema, 'output', 'TaskView')),
        },
      },
      extraErrors: ['404'],
    },
    'GET /webhook/spend': {
      operationId: 'spend',
      tag: 'Read',
      summary: 'Spending per caller key and UTC day: reserved, settled, orders, GPU hours (scope read)',
      description:
        "Signed like getTask (v2 covers the method and the path with its query string). `from` and `to` are UTC dates `YYYY-MM-DD`, both included, default today; at most 400 days (400 otherwise, and on a date that is no date). `reserved_usd` is the worst case still held by orders that have not ended; `settled_usd` the actual cost of orders that ended (USD per hour × hours held), charged to the day each part was reserved; `orders` and `gpu_hours` count settled orders. A key sees only its own lines (and its own budget as `limit_usd_per_day`); the default key and admin keys see every key and SPEND_LIMIT_USD_PER_DAY. Paged: one answer covers at most `limit` days (1–100, default 31; one read of at most that many day items), its `from` and `to` naming the page's days and `keys` and `total` summing them; while more days follow, `next` is an opaque cursor to send back with the same `from`, `to` and `limit`. See docs/budgets.md.",
      parameters: [
        { name: 'from', in: 'query', required: false, schema: { type: 'string', format: 'date' } },
        { name: 'to', in: 'query', required: false, schema: { type: 'string', format: 'date' } },
        {
          name: 'limit',
          in: 'query',
          required: false,
          schema: { type: 'integer', minimum: 1, maximum: 100, default: 31 },
        },
        { name: 'next', in: 'query', required: false, schema: { type: 'string' } },
      ],
      success: {
        '200': {
          description: 'The ledger over the range.',
          content: json(
            { type: 'object' },
            {
              from: '2026-11-25',
              to: '2026-11-25',
              limit_usd_per_day: 50,
              days: [{ day: '2026-11-25', key: 'ci', reserved_usd: 2.8, settled_usd: 1.05, orders: 1, gpu_hours: 3 }],
              keys: [{ key: 'ci', reserved_usd: 2.8, settled_usd: 1.05, orders: 1, gpu_hours: 3 }],
              total: { reserved_usd: 2.8, settled_usd: 1.05, orders: 1, gpu_hours: 3 },
            },
          ),
        },
      },
    },
    'GET /webhook/hosts': {
      operationId: 'hosts',
      tag: 'Read',
      summary: "The relay's own record of each host, with a score (scope read)",
      description:
        "Signed like getTask. One line per host the relay placed an order on in the last 30 days: orders `placed`, `ready`, `readiness_timeouts`, `ssh_never_answered`, `login_refused`, create refusals by reason, `outbids`, `ready_seconds_median`, `failures_24h` (failed starts: readiness or login), and while the host is avoided `avoided_until` (Unix seconds), `avoided_reason`, `avoided_by` (`auto` after HOST_AVOID_AFTER_FAILURES failed starts in 24 h, for HOST_AVOID_HOURS). `score` is (ready + 1) / (placed + 2), halved while avoided relay-wide. A key that does not see every order sees the relay-wide fields (`score`, `refusals`, `ready_seconds_median`, the relay-wide avoidance) and its own outcomes: its own counts and `failures_24h`, and `avoided_scope: key` while its own failed starts avoid the host for it alone; the default key and admin keys see every key's counts and `avoided_keys` (key → until). Hosts avoided for the caller first, then by server id. Paged: at most `limit` hosts (1–100, default 100) per answer, and while more follow `next`, an opaque cursor to send back; each request reads the index item and at most `limit` records. See docs/hosts.md.",
      parameters: [
        {
          name: 'limit',
          in: 'query',
          required: false,
          schema: { type: 'integer', minimum: 1, maximum: 100, default: 100 },
        },
        { name: 'next', in: 'query', required: false, schema: { type: 'string' } },
      ],
      success: {
        '200': {
          description: 'The host records.',
          content: json(
            { type: 'object' },
            {
              hosts: [
                {
                  server_id: 4242,
                  score: 0.125,
                  placed: 2,
                  ready: 0,
                  readiness_timeouts: 0,
                  ssh_never_answered: 0,
                  login_refused: 2,
                  refusals: {},
                  outbids: 0,
                  ready_seconds_median: null,
                  failures_24h: 2,
                  avoided_until: 1764302400,
                  avoided_reason: '2 failed starts in 24 h (login refused)',
                  avoided_by: 'auto',
                  avoided_scope: 'relay',
                  updated_at: 1764216000,
                },
              ],
              avoided: 1,
              next: 'eyJhdm9pZGVkIjpmYWxzZSwiYWZ0ZXIiOjQyNDJ9',
            },
          ),
        },
      },
    },
    'GET /webhook/marketplace': {
      operationId: 'marketplaceSummary',
      tag: 'Read',
      summary: 'GPU availability and prices',
      description:
        'Groups servers by the first word of their first GPU name; `min_price` is USD per hour, whatever period the marketplace prices in. Unsigned, rate limited.',
      success: {
        '200': {
          description: 'Summary of the marketplace.',
          content: json(components.convert(MarketplaceSummarySchema, 'output', 'MarketplaceSummary'), {
            status: 'ok',
            summary: { NVIDIA: { available: 12, total: 20, min_price: 0.21 } },
            total_servers: 20,
            total_available: 12,
          }),
        },
      },
    },
    'POST /slack/command': {
      operationId: 'slackCommand',
      tag: 'Slack',
      summary: 'Slack slash command: rent, cancel, status, extend, bid',
      description:
        '`text` is split on whitespace; the first word is the subcommand: `rent <gpu_type> [max_price]` (`_` stands for a space: `rent RTX_4090 0.5`), `cancel <order_id>`, `status`, `extend <order_id> <hours>` (extend-order), `bid <order_id> <price>` (set-spot-price; the price in the order currency per day). Anything else answers `ephemeral` usage. When a Slack signing secret is configured, `X-Slack-Signature` (v0, 5-minute window) is verified; without one, commands are refused with 403 unless the operator allowed unsigned commands (`ALLOW_UNSIGNED_SLACK`, the local default; off when deployed).',
      parameters: [
        { $ref: '#/components/parameters/SlackSignature' },
        { $ref: '#/components/parameters/SlackRequestTimestamp' },
      ],
      requestBody: {
        required: true,
        content: {
          'application/x-www-form-urlencoded': {
            schema: components.convert(SlackCommandFormSchema, 'input', 'SlackCommandForm'),
            example: { text: 'rent 4090 0.5' },
          },
        },
      },
      success: {
        '200': {
          description: 'Slack message.',
          content: json(components.convert(SlackResponseSchema, 'output', 'SlackResponse'), {
            response_type: 'in_channel',
            text: 'Queued order for 4090',
          }),
        },
      },
      extraErrors: ['401', '403'],
    },
    'POST /admin/keys': {
      operationId: 'createKey',
      tag: 'Admin',
      summary: 'Create a caller key (scope admin); its secret is in this answer only',
      requestBody: {
        required: true,
        content: json(components.convert(CreateKeyBodySchema, 'input', 'CreateKeyBody'), {
          name: 'ci',
          scopes: ['order', 'cancel', 'read'],
          orders_per_hour: 5,
          budget_usd_per_day: 20,
          expires: '2027-01-31',
        }),
      },
      success: {
        '201': {
          description: 'The key with its secret (`rk_…`), shown once.',
          content: json(
            { type: 'object' },
            { name: 'ci', scopes: ['order', 'cancel', 'read'], status: 'active', secret: 'rk_…' },
          ),
        },
      },
      extraErrors: ['409'],
    },
    'GET /admin/keys': {
      operationId: 'listKeys',
      tag: 'Admin',
      summary: 'List caller keys (scope admin); never a secret',
      success: {
        '200': {
          description: 'Every key, revoked and expired ones included.',
          content: json({ type: 'object' }, { keys: [{ name: 'ci', scopes: ['order'], status: 'active' }] }),
        },
      },
    },
    'POST /admin/keys/{name}/revoke': {
      operationId: 'revokeKey',
      tag: 'Admin',
      summary: 'Revoke a caller key (scope admin); refused everywhere within CALLER_KEY_CACHE_SECONDS (≤ 60 s)',
      parameters: [KEY_NAME_PARAMETER],
      success: {
        '200': {
          description: 'Revoked (`already: true` when it was before).',
          content: json({ type: 'object' }, { name: 'ci', status: 'revoked' }),
        },
      },
      extraErrors: ['404'],
    },
    'PUT /admin/keys/{name}/ssh-key': {
      operationId: 'setKeySshKey',
      tag: 'Admin',
      summary:
        "Set or replace a caller key's SSH public key (scope admin): its orders that name no `ssh_public_key` carry it (issue 37)",
      parameters: [KEY_NAME_PARAMETER],
      requestBody: {
        required: true,
        content: json(components.convert(SshKeyBodySchema, 'input', 'SshKeyBody'), {
          ssh_public_key: 'ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIK… ci@build',
        }),
      },
      success: {
        '200': {
          description: 'Stored; the answer names the key by its fingerprint.',
          content: json({ type: 'object' }, { name: 'ci', ssh_key_fingerprint: 'SHA256:…' }),
        },
      },
      extraErrors: ['404', '409'],
    },
    'DELETE /admin/keys/{name}': {
      operationId: 'deleteKey',
      tag: 'Admin',
      summary:
        'Delete a revoked caller key (scope admin): it stops counting against the 200 keys; its name stays taken for 30 days',
      parameters: [KEY_NAME_PARAMETER],
      success: {
        '200': {
          description: 'Deleted.',
          content: json({ type: 'object' }, { name: 'ci', status: 'deleted' }),
        },
      },
      extraErrors: ['404', '409'],
    },
    'POST /admin/hosts/{server_id}/avoid': {
      operationId: 'avoidHost',
      tag: 'Admin',
      summary: 'Avoid a host in every search (scope admin), for `hours` (default HOST_AVOID_HOURS)',
      parameters: [SERVER_ID_PARAMETER],
      requestBody: {
        required: false,
        content: json(components.convert(AvoidHostBodySchema, 'input', 'AvoidHostBody'), {
          hours: 48,
          reason: 'never comes up on ssh',
        }),
      },
      success: {
        '200': {
          description: "The host's record as GET /webhook/hosts lists it; `host.avoided` is logged and posted to chat.",
          content: json(
            { type: 'object' },
            {
              server_id: 4242,
              score: 0.25,
              placed: 2,
              ready: 0,
              login_refused: 2,
              avoided_until: 1764302400,
              avoided_reason: 'operator',
              avoided_by: 'operator',
            },
          ),
        },
      },
    },
    'POST /admin/hosts/{server_id}/clear': {
      operationId: 'clearHost',
      tag: 'Admin',
      summary:
        "End a host's avoidance, relay-wide and per key (scope admin); the failed starts counted towards the next one are forgotten. 404 for a host the relay has no record of (none is created)",
      parameters: [SERVER_ID_PARAMETER],
      success: {
        '200': {
          description: "The host's record as GET /webhook/hosts lists it.",
          content: json({ type: 'object' }, { server_id: 4242, score: 0.25, placed: 2, ready: 0, failures_24h: 0 }),
        },
      },
      extraErrors: ['404'],
    },
    'GET /health': {
      operationId: 'health',
      tag: 'Service',
      summary: 'Liveness check',
      success: {
        '200': {
          description: 'The relay is up.',
          content: json(components.convert(HealthSchema, 'output', 'Health'), { status: 'ok' }),
        },
      },
    },
    'GET /openapi.json': {
      operationId: 'openApi',
      tag: 'Service',
      summary: 'This document',
      success: { '200': { description: 'OpenAPI 3.1 document.', content: json({ type: 'object' }) } },
    },
  };
};
