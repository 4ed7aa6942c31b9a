/** POST /webhook/create-order: signed; queues the create-order workflow (Step Functions). */
import { CreateOrderLeaseBodySchema } from '../../domain/lease';
import { callbackUrlProblem, normalizeCreateOrder, parseBody } from '../../domain/requests';
import { httpError, jsonResponse, type ApiResult, type RelayEvent } from '../../middleware/http';
import { acceptRequest, apiHandler, idempotencyKeyOf, type AcceptDeps, type ApiHandler } from './chain';
import { acceptDepsFromEnv, workflowStarterFromEnv } from './deps';

const postCreateOrder = async (event: RelayEvent, deps: AcceptDeps): Promise<ApiResult> => {
  const parsed = parseBody(CreateOrderLeaseBodySchema, event.jsonBody ?? {});
  if (!parsed.ok) throw httpError(400, parsed.error);
  const problem = callbackUrlProblem(parsed.value.callback_url, deps.env.ALLOW_PRIVATE_CALLBACKS);
  if (problem) throw httpError(400, problem);
  const idempotencyKey = idempotencyKeyOf(event);
  const input = normalizeCreateOrder(parsed.value, {
    image: deps.env.DEFAULT_IMAGE,
    currency: deps.env.DEFAULT_CURRENCY,
    ports: deps.env.DEFAULT_PORTS,
    maxHours: deps.env.DEFAULT_MAX_HOURS,
  });
  const { taskId, replayed } = await acceptRequest(deps, { kind: 'create-order', input }, { source: 'webhook' }, idempotencyKey);
  return jsonResponse(
    202,
    { status: 'queued', task_id: taskId, message: `Order creation queued for ${input.gpu_type}` },
    replayed ? { 'Idempotent-Replayed': 'true' } : {},
  );
};

/** The handler with injected deps (tests); `handler` wires the real adapters. */
export const createCreateOrderHandler = (deps: () => AcceptDeps): ApiHandler =>
  apiHandler({ routeId: 'CreateOrder', deps, json: true }, postCreateOrder);

export const handler = createCreateOrderHandler(acceptDepsFromEnv({ workflow: workflowStarterFromEnv }));
