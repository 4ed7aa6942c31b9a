/**
 * The OpenAPI 3.1 description of the relay, served at GET /openapi.json.
 *
 * Bodies and answers are generated from the zod schemas the handlers validate with
 * (./requests.ts and ./response-schemas.ts, via zod 4's `z.toJSONSchema`, JSON Schema 2020-12 =
 * OpenAPI 3.1's dialect), and the operations from the route table (contract/routes.ts), so the
 * document cannot drift from the code. Pure: no environment, no clock. The parts: each route's
 * operation (openapi-operations.ts), the callback payloads (callback-schemas.ts) and callbacks
 * (openapi-callbacks.ts), zod → components (schema-components.ts); this file puts them together.
 */
import { ROUTE_SCOPES, ROUTES } from '../../contract/routes';
import { SCOPES } from '../../contract/scopes';
import type { RouteDefinition } from '../../contract/routes';
import { REPLAY_WINDOW_SECONDS } from '../domain/signing';
import { TASK_ID_PATTERN } from '../domain/requests/task-view';
import { OrderEventSchema, TaskResultSchema } from './callback-schemas';
import {
  CALLBACK_DESCRIPTION,
  ORDER_EVENTS_DESCRIPTION,
  orderEventCallback,
  taskResultCallback,
} from './openapi-callbacks';
import { operationDocs, type OperationDoc } from './openapi-operations';
import { ErrorSchema } from './response-schemas';
import { json, SchemaComponents, type JsonObject } from './schema-components';

export interface OpenApiOptions {
  /** Base URL callers use, e.g. the API Gateway endpoint. @default - no `servers` entry (same origin) */
  readonly serverUrl?: string;
  /** MAX_REQUESTS_PER_MINUTE, shown in the rate-limit description. @default 60 */
  readonly requestsPerMinute?: number;
  /** Largest accepted body in bytes, shown in the 413 description. @default 65536 */
  readonly maxBodyBytes?: number;
}

// ---- document ----------------------------------------------------------------------------------

const errorResponse = (description: string, example: string, headers?: JsonObject): JsonObject => ({
  description,
  ...(headers ? { headers } : {}),
  content: json({ $ref: '#/components/schemas/Error' }, { error: example }),
});
const responseRef = (name: string): JsonObject => ({ $ref: `#/components/responses/${name}` });

const SIGNING_DESCRIPTION = `Every signed route requires \`X-Webhook-Signature\` and, with signature v2, \`X-Webhook-Timestamp\` (Unix seconds).

* Signature v2 (the default; the only one a deployed relay accepts): \`X-Webhook-Signature: v2=<hex>\`, the lowercase hex HMAC-SHA256, keyed with the shared webhook secret, of \`v2.<timestamp>.<METHOD>.<path with query>.<raw body>\` (the method in upper case, the path with its query string exactly as sent, the body empty for a GET). Example: secret \`example-secret\`, timestamp \`1700000000\`, \`POST /webhook/create-order\`, body \`{"gpu_type":"RTX 4090","max_price":0.5}\` → \`v2=9ff10db919ea09a300dbfcd0c1a4a58084b27fafe08b9b82c508e46b08fc8c7b\`.
* Signature v1 (the original spec's; accepted only where SIGNATURE_VERSIONS is \`v1,v2\`, e.g. \`npm start\`): a bare hex digest of the raw body, or with \`X-Webhook-Timestamp\` of \`<timestamp>.<body>\`; bodiless GETs sign their path with its query string. \`/admin/keys*\` and every request with \`X-Webhook-Key-Id\` need v2 whatever the setting: a v1 signature there answers 401 \`signature v2 required for this route\`.
* A timestamp more than ${REPLAY_WINDOW_SECONDS} s from the relay's clock is refused (replay window). Sign the exact bytes you send.
* A signature is good once, on one route: the same signed request sent again to the same route while its timestamp is accepted gets 202 with the first request's \`task_id\` and \`Idempotent-Replayed: true\` and queues nothing; the same signature on another route answers 401 \`Invalid signature\`.
* Unknown body fields answer 400 \`unknown field <name>\`.

Missing signature: 401 \`Missing signature\`; missing timestamp with v2: 401 \`Missing timestamp\`; wrong signature: 401 \`Invalid signature\`. The rate limit is checked before the signature.

Caller keys: with \`X-Webhook-Key-Id: <name>\` the request is signed with that key's secret instead (v2, same bytes). An unknown, revoked or expired key answers 401 \`Invalid signature\` (no hint which); a key without the route's scope (${SCOPES.map((s) => `\`${s}\``).join(', ')}) answers 403 \`key <name> may not <scope>\` and nothing is queued. Without the header the shared secret acts as the \`default\` key with every scope.`;

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
  const operations = operationDocs(components);

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
          description: `Unix seconds, part of the signed bytes. Required with signature v2 (\`v2.<timestamp>.<METHOD>.<path>.<body>\`); with v1 optional (\`<timestamp>.<body>\`, or \`<timestamp>.<path>\`; required when the relay runs with REQUIRE_WEBHOOK_TIMESTAMP=true). Refused with 401 when more than ${REPLAY_WINDOW_SECONDS} s from the relay's clock.`,
          schema: { type: 'string', pattern: '^\\d{1,12}$' },
          example: '1767225600',
        },
        WebhookKeyId: {
          name: 'X-Webhook-Key-Id',
          in: 'header',
          required: false,
          description:
            'The caller key whose secret signed the request; absent = the shared webhook secret (the `default` key, every scope).',
          schema: { type: 'string', pattern: '^[a-z0-9][a-z0-9_-]{0,63}$' },
          example: 'ci',
        },
        IdempotencyKey: {
          name: 'Idempotency-Key',
          in: 'header',
          required: false,
          description:
            "A repeat of a signed POST with the same key within 24 h returns the first request's task_id and starts nothing.",
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
        BadRequest: errorResponse(
          "Missing or invalid field, or a body that is not JSON. The spec's exact messages are kept (e.g. `gpu_type required`).",
          'gpu_type required',
        ),
        Unauthorized: errorResponse('Missing or invalid signature, or a stale timestamp.', 'Invalid signature'),
        Forbidden: errorResponse(
          'Slack commands are refused: no Slack signing secret is configured and unsigned commands are not allowed.',
          'Slack commands are disabled: this relay has no Slack signing secret configured',
        ),
        NotFound: errorResponse('No task with this id.', 'Task not found'),
        MissingScope: errorResponse(
          "The caller key lacks the route's scope; nothing was queued.",
          'key ci may not cancel',
        ),
        Conflict: errorResponse(
          'A key of this name exists (names are never reused), the 200-key limit is reached (`key limit reached (200)`: delete revoked keys), or the key to delete is not revoked.',
          'key ci exists (names are never reused, even revoked)',
        ),
        PayloadTooLarge: errorResponse(
          `Body larger than ${maxBody} bytes.`,
          `Request body too large (max ${maxBody} bytes)`,
        ),
        TooManyRequests: errorResponse(
          `More than ${perMinute} requests from one client address within 60 s; or, for a standing order (\`wait_seconds\`), a cap of the waiting queue (\`too many waiting orders (20 for key ci)\`, \`too many waiting orders (1000)\`), nothing queued.`,
          'Rate limit exceeded',
          { 'Retry-After': { $ref: '#/components/headers/RetryAfter' } },
        ),
        InternalError: errorResponse(
          'Unexpected failure (for the marketplace summary: the marketplace could not be read).',
          'Internal server error',
        ),
        Unavailable: errorResponse(
          'A dependency (secret store, rate-limit store, queue or workflow) is unavailable; retry later.',
          'Service unavailable; retry later',
          { 'Retry-After': { $ref: '#/components/headers/RetryAfter' } },
        ),
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
const operation = (
  route: RouteDefinition,
  doc: OperationDoc,
  taskResult: JsonObject,
  orderEvent: JsonObject,
): JsonObject => {
  const errors = new Set<string>(doc.extraErrors ?? []);
  if (doc.requestBody) errors.add('400').add('413');
  if (route.signed) errors.add('401').add('503');
  if (route.rateLimited) errors.add('429').add('503');
  if (route.path !== '/health' && route.path !== '/openapi.json') errors.add('500');
  if (doc.callback) errors.add('503'); // the hand-off to the queue or the workflow failed

  const parameters: JsonObject[] = [...(doc.parameters ?? [])];
  if (route.signed)
    parameters.push(
      { $ref: '#/components/parameters/WebhookTimestamp' },
      { $ref: '#/components/parameters/WebhookKeyId' },
    );
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
    ...(doc.callback
      ? {
          callbacks: {
            taskResult: taskResultCallback(taskResult),
            ...(doc.orderEvents ? { orderEvent: orderEventCallback(orderEvent) } : {}),
          },
        }
      : {}),
    'x-rate-limited': route.rateLimited,
  };
};
