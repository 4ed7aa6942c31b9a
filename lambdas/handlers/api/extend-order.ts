/** POST /webhook/extend-order: signed; queues an extend-order job (SQS) that moves an order's lease end. */
import { ExtendOrderBodySchema } from '../../http/task-bodies/extend-order';
import { callbackOf } from '../../domain/requests/request-rules';
import { queuedRoute } from './queued-route';

/** The handler; tests inject deps, `handler` wires the real adapters. */
export const createExtendOrderHandler = queuedRoute({
  routeId: 'ExtendOrder',
  kind: 'extend-order',
  body: ExtendOrderBodySchema,
  input: (body) => ({ order_id: body.order_id, hours: body.hours, ...callbackOf(body) }),
  message: (input) => `Extension of order ${input.order_id} by ${input.hours} h queued`,
});

export const handler = createExtendOrderHandler();
