/** POST /webhook/cancel-task: signed; queues a cancel-task job (SQS) that ends a waiting standing order (issue 23). */
import { CancelTaskBodySchema } from '../../http/task-requests';
import type { AcceptDeps } from './accept-deps';
import { acceptRoute } from './accept-route';
import type { ApiHandler } from './chain';
import { jobQueueFromEnv } from './deps';

/** The handler; tests inject deps, `handler` wires the real adapters. */
export const createCancelTaskHandler = (deps?: () => AcceptDeps): ApiHandler =>
  acceptRoute(
    {
      routeId: 'CancelTask',
      kind: 'cancel-task',
      body: CancelTaskBodySchema,
      input: (body) => ({
        task_id: body.task_id,
        ...(body.callback_url !== undefined ? { callback_url: body.callback_url } : {}),
      }),
      message: (input) => `Cancellation of task ${input.task_id} queued`,
      handOff: { queue: jobQueueFromEnv },
    },
    deps,
  );

export const handler = createCancelTaskHandler();
