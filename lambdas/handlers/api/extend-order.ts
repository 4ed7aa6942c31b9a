/** POST /webhook/extend-order: signed; queues an extend-order job (SQS) that moves an order's lease end. */
import { ExtendOrderBodySchema, type ExtendOrderInput } from '../../domain/lease';
import { callbackUrlProblem, parseBody } from '../../domain/requests';
import { httpError, jsonResponse, type ApiResult, type RelayEvent } from '../../middleware/http';
import { acceptRequest, apiHandler, idempotencyKeyOf, type AcceptDeps, type ApiHandler } from './chain';
import { acceptDepsFromEnv, jobQueueFromEnv } from './deps';

const postExtendOrder = async (event: RelayEvent, deps: AcceptDeps): Promise<ApiResult> => {
  const parsed = parseBody(ExtendOrderBodySchema, event.jsonBody ?? {});
  if (!parsed.ok) throw httpError(400, parsed.error);
  const problem = callbackUrlProblem(parsed.value.callback_url, deps.env.ALLOW_PRIVATE_CALLBACKS);
  if (problem) throw httpError(400, problem);
  const idempotencyKey = idempotencyKeyOf(event);
  const input: ExtendOrderInput = {
    order_id: parsed.value.order_id,
    hours: parsed.value.hours,
    ...(parsed.value.callback_url !== undefined ? { callback_url: parsed.value.callback_url } : {}),
  };
  const { taskId, replayed } = await acceptRequest(deps, { kind: 'extend-order', input }, { source: 'webhook' }, idempotencyKey);
  return jsonResponse(
    202,
    { status: 'queued', task_id: taskId, message: `Extension of order ${input.order_id} by ${input.hours} h queued` },
    replayed ? { 'Idempotent-Replayed': 'true' } : {},
  );
};

/** The handler with injected deps (tests); `handler` wires the real adapters. */
export const createExtendOrderHandler = (deps: () => AcceptDeps): ApiHandler =>
  apiHandler({ routeId: 'ExtendOrder', deps, json: true }, postExtendOrder);

export const handler = createExtendOrderHandler(acceptDepsFromEnv({ queue: jobQueueFromEnv }));
