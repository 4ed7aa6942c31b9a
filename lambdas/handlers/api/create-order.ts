/** POST /webhook/create-order: signed; queues the create-order workflow (Step Functions). */
import { normalizeCreateOrder } from '../../domain/requests/request-rules';
import { hostDefaults } from '../../adapters/host-defaults';
import { randomToken } from '../../adapters/random-token';
import { CreateOrderLeaseBodySchema } from '../../http/create-order-requests';
import { budgetApplies, MAX_HOURS_REQUIRED } from '../../domain/teams/spend-budget';
import type { AcceptDeps } from './accept-deps';
import { acceptRoute } from './accept-route';
import type { ApiHandler } from './chain';
import { waitingTasksFromEnv, workflowStarterFromEnv } from './deps';

/** The handler; tests inject deps, `handler` wires the real adapters. */
export const createCreateOrderHandler = (deps?: () => AcceptDeps): ApiHandler =>
  acceptRoute(
    {
      routeId: 'CreateOrder',
      kind: 'create-order',
      body: CreateOrderLeaseBodySchema,
      input: (body, env) =>
        normalizeCreateOrder(body, {
          image: env.DEFAULT_IMAGE,
          currency: env.DEFAULT_CURRENCY,
          ports: env.DEFAULT_PORTS,
          maxHours: env.DEFAULT_MAX_HOURS,
          ...hostDefaults(env),
          // Used only when the order maps an http port and the request gives no token (issue 37 §1).
          generatedJupyterToken: randomToken(),
        }),
      // Under a budget (SPEND_LIMIT_USD_PER_DAY, or the key's own) the worst case must be bounded (issue 24).
      refuse: (input, env, caller) =>
        input.max_hours === undefined && budgetApplies(env.SPEND_LIMIT_USD_PER_DAY, caller)
          ? MAX_HOURS_REQUIRED
          : undefined,
      message: (input) => `Order creation queued for ${input.gpu_type}`,
      handOff: { workflow: workflowStarterFromEnv, waiting: waitingTasksFromEnv },
    },
    deps,
  );

export const handler = createCreateOrderHandler();
