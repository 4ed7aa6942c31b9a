/** POST /webhook/price-alert: signed; queues a single price check (SQS). */
import { normalizePriceAlert } from '../../domain/requests/request-rules';
import { hostDefaults } from '../../adapters/host-defaults';
import { PriceAlertBodySchema } from '../../http/order-requests';
import type { AcceptDeps } from './accept-deps';
import { acceptRoute } from './accept-route';
import type { ApiHandler } from './chain';
import { jobQueueFromEnv } from './deps';

/** The handler; tests inject deps, `handler` wires the real adapters. */
export const createPriceAlertHandler = (deps?: () => AcceptDeps): ApiHandler =>
  acceptRoute(
    {
      routeId: 'PriceAlert',
      kind: 'price-alert',
      body: PriceAlertBodySchema,
      input: (body, env) => normalizePriceAlert(body, { image: env.DEFAULT_IMAGE, ...hostDefaults(env) }),
      message: (input) => `Price alert for ${input.gpu_type} at or under $${input.target_price}/hr queued`,
      handOff: { queue: jobQueueFromEnv },
    },
    deps,
  );

export const handler = createPriceAlertHandler();
