/** POST /webhook/price-alert: signed; queues a single price check (SQS). */
import { normalizePriceAlert } from '../../domain/requests/request-rules';
import { hostDefaults } from '../../adapters/host-defaults';
import { randomToken } from '../../adapters/random-token';
import { mapsHttp } from '../../domain/access/order-access';
import { PriceAlertBodySchema } from '../../http/price-alert-requests';
import { queuedRoute } from './queued-route';

/** The handler; tests inject deps, `handler` wires the real adapters. */
export const createPriceAlertHandler = queuedRoute({
  routeId: 'PriceAlert',
  kind: 'price-alert',
  body: PriceAlertBodySchema,
  input: (body, env) => ({
    ...normalizePriceAlert(body, { image: env.DEFAULT_IMAGE, ...hostDefaults(env) }),
    // The order an alert queues maps DEFAULT_PORTS: no notebook without a token (issue 37 §1).
    ...(mapsHttp(env.DEFAULT_PORTS) ? { jupyter_token: randomToken() } : {}),
  }),
  message: (input) => `Price alert for ${input.gpu_type} at or under $${input.target_price}/hr queued`,
});

export const handler = createPriceAlertHandler();
