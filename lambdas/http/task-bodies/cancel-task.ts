/** The body of POST /webhook/cancel-task (one module per route, as cancel-order.ts); the rule is in standing-orders.ts. */
import * as z from 'zod/mini';
import { CANCEL_TASK_REQUIRED } from '../../domain/recovery/standing-orders';
import { isTaskId } from '../../domain/requests/task-view';
import { bodyObject, CallbackUrlSchema, optional, refuse } from '../request-fields';

/** POST /webhook/cancel-task. */
export const CancelTaskBodySchema = bodyObject({
  task_id: z.pipe(
    z.unknown(),
    z.transform((value, ctx): string => {
      if (value === undefined || value === null || value === '') return refuse(ctx, CANCEL_TASK_REQUIRED);
      return typeof value === 'string' && isTaskId(value) ? value.toLowerCase() : refuse(ctx, 'Invalid task_id');
    }),
  ),
  callback_url: optional(CallbackUrlSchema),
});
