/**
 * The HTTP side of the API's shapes: every answer body, and the form Slack posts. The OpenAPI
 * document (./openapi-document.ts) is generated from these and from the request schemas the domain
 * validates with (lambdas/domain/requests.ts).
 */
import * as z from 'zod';
import { MAX_URL_LENGTH } from '../domain/requests';
import { TaskKindSchema, TaskStateSchema } from '../domain/task';

/** Every error answer: `{ "error": "<text>" }`. */
export const ErrorSchema = z.object({ error: z.string() }).meta({ id: 'Error' });

/** 202 of create-order, cancel-order and price-alert. */
export const AcceptedSchema = z.object({
  status: z.literal('queued'),
  task_id: z.string().meta({ description: 'UUID of the task; look it up at GET /webhook/tasks/{task_id}' }),
  message: z.string(),
}).meta({ id: 'Accepted' });

/** 202 of the status route (the spec gives it no message). */
export const StatusAcceptedSchema = z.object({ status: z.literal('queued'), task_id: z.string() }).meta({ id: 'StatusAccepted' });

export const HealthSchema = z.object({ status: z.literal('ok') }).meta({ id: 'Health' });

export const MarketplaceGroupSchema = z.object({
  available: z.number().int(),
  total: z.number().int(),
  min_price: z.number().nullable(),
});

/** GET /webhook/marketplace (order-relay.md §4.1). */
export const MarketplaceSummarySchema = z.object({
  status: z.literal('ok'),
  summary: z.record(z.string(), MarketplaceGroupSchema),
  total_servers: z.number().int(),
  total_available: z.number().int(),
}).meta({ id: 'MarketplaceSummary' });

/** The form fields Slack posts to a slash-command URL (others are ignored). */
export const SlackCommandFormSchema = z.object({
  text: z.string().max(2000).optional(),
  command: z.string().max(100).optional(),
  response_url: z.string().max(MAX_URL_LENGTH).optional(),
  user_id: z.string().max(100).optional(),
});

export const SlackResponseSchema = z.object({
  response_type: z.enum(['in_channel', 'ephemeral']),
  text: z.string(),
}).meta({ id: 'SlackResponse' });

/** GET /webhook/tasks/{task_id}. */
export const TaskViewSchema = z.object({
  task_id: z.string(),
  kind: TaskKindSchema,
  state: TaskStateSchema,
  result: z.record(z.string(), z.unknown()).optional().meta({ description: 'The result payload (order-relay.md §2.3) once the task ended' }),
  created_at: z.string(),
  updated_at: z.string(),
  finished_at: z.string().optional(),
}).meta({ id: 'TaskView' });
