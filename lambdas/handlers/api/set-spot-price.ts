/** POST /webhook/set-spot-price: signed; queues a set-spot-price job (SQS) that changes a spot order's bid. */
import { SetSpotPriceBodySchema } from '../../http/task-requests';
import type { AcceptDeps } from './accept-deps';
import { acceptRoute } from './accept-route';
import type { ApiHandler } from './chain';
import { jobQueueFromEnv } from './deps';

/** The handler; tests inject deps, `handler` wires the real adapters. */
export const createSetSpotPriceHandler = (deps?: () => AcceptDeps): ApiHandler =>
  acceptRoute(
    {
      routeId: 'SetSpotPrice',
      kind: 'set-spot-price',
      body: SetSpotPriceBodySchema,
      input: (body) => ({
        order_id: body.order_id,
        desired_price: body.desired_price,
        ...(body.callback_url !== undefined ? { callback_url: body.callback_url } : {}),
      }),
      message: (input) => `Spot price change of order ${input.order_id} to ${input.desired_price} queued`,
      handOff: { queue: jobQueueFromEnv },
    },
    deps,
  );

export const handler = createSetSpotPriceHandler();
