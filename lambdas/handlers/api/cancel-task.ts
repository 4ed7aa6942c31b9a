/** POST /webhook/cancel-task: signed; queues a cancel-task job (SQS) that ends a waiting standing order (issue 23). */
import { CancelTaskBodySchema } from '../../http/task-bodies/cancel-task';
import { callbackOf } from '../../domain/requests/request-rules';
import { queuedRoute } from './queued-route';

/** The handler; tests inject deps, `handler` wires the real adapters. */
export const createCancelTaskHandler = queuedRoute({
  routeId: 'CancelTask',
  kind: 'cancel-task',
  body: CancelTaskBodySchema,
  input: (body) => ({ task_id: body.task_id, ...callbackOf(body) }),
  message: (input) => `Cancellation of task ${input.task_id} queued`,
});

export const handler = createCancelTaskHandler();
