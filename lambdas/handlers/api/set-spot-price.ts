/** POST /webhook/set-spot-price: signed; queues a set-spot-price job (SQS) that changes a spot order's bid. */
import { SetSpotPriceBodySchema } from '../../http/task-bodies/set-spot-price';
import { callbackOf } from '../../domain/requests/request-rules';
import { queuedRoute } from './queued-route';

/** The handler; tests inject deps, `handler` wires the real adapters. */
export const createSetSpotPriceHandler = queuedRoute({
  routeId: 'SetSpotPrice',
  kind: 'set-spot-price',
  body: SetSpotPriceBodySchema,
  input: (body) => ({ order_id: body.order_id, desired_price: body.desired_price, ...callbackOf(body) }),
  message: (input) => `Spot price change of order ${input.order_id} to ${input.desired_price} queued`,
});

export const handler = createSetSpotPriceHandler();
