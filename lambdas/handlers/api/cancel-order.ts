/** POST /webhook/cancel-order: signed; queues a cancel job (SQS). */
import { normalizeCancelOrder } from '../../domain/requests/request-rules';
import { CancelOrderBodySchema } from '../../http/task-bodies/cancel-order';
import { queuedRoute } from './queued-route';

/** The handler; tests inject deps, `handler` wires the real adapters. */
export const createCancelOrderHandler = queuedRoute({
  routeId: 'CancelOrder',
  kind: 'cancel-order',
  body: CancelOrderBodySchema,
  input: (body) => normalizeCancelOrder(body),
  message: (input) => `Cancellation of order ${input.order_id} queued`,
});

export const handler = createCancelOrderHandler();
