/**
 * The HTTP side of the API's shapes: every answer body, and the form Slack posts. The OpenAPI
 * document (./openapi-document.ts) is generated from these and from the request schemas the domain
 * validates with (./requests.ts).
 */
import * as z from 'zod/mini';
import { describe } from './request-fields';
import { TaskViewShape } from '../domain/requests/task-view';

/** Every error answer: `{ "error": "<text>" }`. */
export const ErrorSchema = describe(z.object({ error: z.string() }), { id: 'Error' });

/** 202 of create-order, cancel-order and price-alert. */
export const AcceptedSchema = describe(
  z.object({
    status: z.literal('queued'),
    task_id: describe(z.string(), { description: 'UUID of the task; look it up at GET /webhook/tasks/{task_id}' }),
    message: z.string(),
  }),
  { id: 'Accepted' },
);

/** 202 of the status route (the spec gives it no message). */
export const StatusAcceptedSchema = describe(z.object({ status: z.literal('queued'), task_id: z.string() }), {
  id: 'StatusAccepted',
});

export const HealthSchema = describe(z.object({ status: z.literal('ok') }), { id: 'Health' });

export const MarketplaceGroupSchema = z.object({
  available: z.int(),
  total: z.int(),
  min_price: describe(z.nullable(z.number()), {
    description: 'Lowest spot price in the group, in USD per hour (rented servers included); null when none has one',
  }),
});

export const MarketplaceModelSchema = z.object({
  available: z.int(),
  total: z.int(),
  min_price_usd_per_hour: describe(z.object({ spot: z.nullable(z.number()), on_demand: z.nullable(z.number()) }), {
    description:
      "Lowest prices among the model's available servers, in USD per hour: spot, and on-demand in any currency; null when none states one",
  }),
  all_in_usd_per_hour: describe(z.object({ spot: z.nullable(z.number()), on_demand: z.nullable(z.number()) }), {
    description:
      'The same lowest prices with the renter fee (RENTER_FEE_PERCENT): price × (1 + fee), in USD per hour (issue 31 §6)',
  }),
  creation_fee_usd: describe(z.number(), {
    description:
      'The fee charged once per order placed (ORDER_CREATION_FEE_USD), beside the hourly price (issue 31 §6)',
  }),
});

/** GET /webhook/marketplace (order-relay.md §4.1; `models`: issue 28). */
export const MarketplaceSummarySchema = describe(
  z.object({
    status: z.literal('ok'),
    summary: describe(z.record(z.string(), MarketplaceGroupSchema), {
      description: "Servers grouped by the first word of the first GPU's name (the spec's summary: `NVIDIA`, `RTX`)",
    }),
    models: describe(z.record(z.string(), MarketplaceModelSchema), {
      description:
        'Servers grouped by the model name to pass as `gpu_type` (`RTX 4090`: the GPU name without its maker words), cheapest spot price first',
    }),
    total_servers: z.int(),
    total_available: z.int(),
  }),
  { id: 'MarketplaceSummary' },
);

// The Slack command's form (a request) is in slack-requests.ts: the Slack function builds it alone.
export { SlackCommandFormSchema } from './slack-requests';

export const SlackResponseSchema = describe(
  z.object({
    response_type: z.enum(['in_channel', 'ephemeral']),
    text: z.string(),
  }),
  { id: 'SlackResponse' },
);

/**
 * GET /webhook/tasks/{task_id}: the domain's one declaration of the view (TaskViewShape), with the
 * OpenAPI descriptions of its fields added here (descriptions only: every field comes from the shape).
 */
/* @__NO_SIDE_EFFECTS__ */
const taskViewField = <K extends keyof ReturnType<typeof TaskViewShape>['shape']>(key: K, description: string) =>
  // A copy with the description (as `.meta()` makes one): the shape's own field schemas are shared.
  TaskViewShape().shape[key].check(z.meta({ description }));

export const TaskViewSchema = describe(
  z.extend(TaskViewShape(), {
    result: taskViewField('result', 'The result payload (order-relay.md §2.3) once the task ended'),
    waiting_until: taskViewField(
      'waiting_until',
      'A waiting standing order (state `waiting`): when its wait ends, Unix seconds',
    ),
    position: taskViewField(
      'position',
      'A waiting standing order: its 1-based place among the tasks waiting for the same GPU type',
    ),
    order_id: taskViewField(
      'order_id',
      "Outbid recovery, once the task has history: the task's current order (a replacement moves it)",
    ),
    history: taskViewField('history', 'Outbid recovery: each step, oldest first'),
  }),
  { id: 'TaskView' },
);
