/** POST /webhook/cancel-order: signed; queues a cancel job (SQS). */
import { normalizeCancelOrder } from '../../domain/requests/request-rules';
import { CancelOrderBodySchema } from '../../http/task-requests';
import type { AcceptDeps } from './accept-deps';
import { acceptRoute } from './accept-route';
import type { ApiHandler } from './chain';
import { jobQueueFromEnv } from './deps';

/** The handler; tests inject deps, `handler` wires the real adapters. */
export const createCancelOrderHandler = (deps?: () => AcceptDeps): ApiHandler =>
  acceptRoute(
    {
      routeId: 'CancelOrder',
      kind: 'cancel-order',
      body: CancelOrderBodySchema,
      input: (body) => normalizeCancelOrder(body),
      message: (input) => `Cancellation of order ${input.order_id} queued`,
      handOff: { queue: jobQueueFromEnv },
    },
    deps,
  );

export const handler = createCancelOrderHandler();
