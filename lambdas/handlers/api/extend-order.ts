/** POST /webhook/extend-order: signed; queues an extend-order job (SQS) that moves an order's lease end. */
import { ExtendOrderBodySchema } from '../../http/task-requests';
import type { AcceptDeps } from './accept-deps';
import { acceptRoute } from './accept-route';
import type { ApiHandler } from './chain';
import { jobQueueFromEnv } from './deps';

/** The handler; tests inject deps, `handler` wires the real adapters. */
export const createExtendOrderHandler = (deps?: () => AcceptDeps): ApiHandler =>
  acceptRoute(
    {
      routeId: 'ExtendOrder',
      kind: 'extend-order',
      body: ExtendOrderBodySchema,
      input: (body) => ({
        order_id: body.order_id,
        hours: body.hours,
        ...(body.callback_url !== undefined ? { callback_url: body.callback_url } : {}),
      }),
      message: (input) => `Extension of order ${input.order_id} by ${input.hours} h queued`,
      handOff: { queue: jobQueueFromEnv },
    },
    deps,
  );

export const handler = createExtendOrderHandler();
