/** POST /webhook/cancel-order: signed; queues a cancel job (SQS). */
import { callbackUrlProblem, CancelOrderBodySchema, normalizeCancelOrder, parseBody } from '../../domain/requests';
import { httpError, jsonResponse, type ApiResult, type RelayEvent } from '../../middleware/http';
import { acceptRequest, apiHandler, idempotencyKeyOf, type AcceptDeps, type ApiHandler } from './chain';
import { acceptDepsFromEnv, jobQueueFromEnv } from './deps';

const postCancelOrder = async (event: RelayEvent, deps: AcceptDeps): Promise<ApiResult> => {
  const parsed = parseBody(CancelOrderBodySchema, event.jsonBody ?? {});
  if (!parsed.ok) throw httpError(400, parsed.error);
  const problem = callbackUrlProblem(parsed.value.callback_url, deps.env.ALLOW_PRIVATE_CALLBACKS);
  if (problem) throw httpError(400, problem);
  const idempotencyKey = idempotencyKeyOf(event);
  const input = normalizeCancelOrder(parsed.value);
  const { taskId, replayed } = await acceptRequest(deps, { kind: 'cancel-order', input }, { source: 'webhook' }, idempotencyKey);
  return jsonResponse(
    202,
    { status: 'queued', task_id: taskId, message: `Cancellation of order ${input.order_id} queued` },
    replayed ? { 'Idempotent-Replayed': 'true' } : {},
  );
};

/** The handler with injected deps (tests); `handler` wires the real adapters. */
export const createCancelOrderHandler = (deps: () => AcceptDeps): ApiHandler =>
  apiHandler({ routeId: 'CancelOrder', deps, json: true }, postCancelOrder);

export const handler = createCancelOrderHandler(acceptDepsFromEnv({ queue: jobQueueFromEnv }));
