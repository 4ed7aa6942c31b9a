/**
 * The two callbacks of the OpenAPI document (openapi-document.ts): the task result and the order's
 * lifecycle events POSTed to callback_url, with their Standard Webhooks headers.
 */
import { json, type JsonObject } from './schema-components';

export const ORDER_EVENTS_DESCRIPTION = `Besides its one task result, an order the relay placed (or whose lease a request created) reports lifecycle events to the callback_url of the request that placed it: \`order.lease_expiring\` (LEASE_WARNING_SECONDS before the lease ends), \`order.lease_expired\` (the relay cancelled it), \`order.status_changed\` (\`from\` → \`to\`). Signed and retried exactly like result callbacks; \`webhook-id\` is unique per event and the same on every retry. Each event is delivered once.`;

export const CALLBACK_DESCRIPTION = `When the request has \`callback_url\`, the task's result is POSTed there as JSON once the task ends (success or failure), signed per Standard Webhooks (https://www.standardwebhooks.com) with the relay's callback signing secret (\`whsec_…\`), which is never the webhook secret, so a delivery can never be replayed as a request: \`webhook-signature\` = \`v1,\` + base64 HMAC-SHA256 of \`<webhook-id>.<webhook-timestamp>.<body>\`. Verify it with a Standard Webhooks library. \`webhook-id\` is the same on every retry of the delivery, so a receiver can drop duplicates. Deliveries time out after 10 s and are retried with backoff on 5xx, 429 and timeouts, never on other 4xx or redirects.`;

/** The Standard Webhooks headers of a delivery (results and events alike). */
const deliveryHeaders = (idDescription: string): JsonObject[] => [
  { name: 'webhook-id', in: 'header', required: true, schema: { type: 'string' }, description: idDescription },
  {
    name: 'webhook-timestamp',
    in: 'header',
    required: true,
    schema: { type: 'string', pattern: '^\\d{1,12}$' },
    description: 'Unix seconds when this attempt was signed; reject it when more than 5 minutes from your clock.',
  },
  {
    name: 'webhook-signature',
    in: 'header',
    required: true,
    schema: { type: 'string', pattern: '^v1,[A-Za-z0-9+/]+=*( v1,[A-Za-z0-9+/]+=*)*$' },
    description:
      '`v1,<base64 HMAC-SHA256 of "<webhook-id>.<webhook-timestamp>.<body>">` keyed with the callback signing secret (`whsec_…`, never the webhook secret), one per active key, space-separated.',
  },
];

export const orderEventCallback = (orderEvent: JsonObject): JsonObject => ({
  '{$request.body#/callback_url}': {
    post: {
      summary: 'A lifecycle event of the order, POSTed to callback_url',
      description: ORDER_EVENTS_DESCRIPTION,
      parameters: deliveryHeaders('Unique per event, the same on every retry of its delivery.'),
      requestBody: {
        required: true,
        content: json(orderEvent, {
          event: 'order.lease_expired',
          order_id: 123456,
          task_id: '6f1c0b1e-8a57-4f0e-9b38-0d6c2f4c9a11',
          occurred_at: 1767229200,
          lease_expires_at: 1767229180,
        }),
      },
      responses: {
        '2XX': { description: 'Delivered.' },
        '5XX': { description: 'Retried with backoff.' },
      },
    },
  },
});

export const taskResultCallback = (taskResult: JsonObject): JsonObject => ({
  '{$request.body#/callback_url}': {
    post: {
      summary: "The task's result, POSTed to callback_url",
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
