/** POST /webhook/set-spot-price: signed; queues a set-spot-price job (SQS) that changes a spot order's bid. */
import { SetSpotPriceBodySchema, type SetSpotPriceInput } from '../../domain/lease';
import { callbackUrlProblem, parseBody } from '../../domain/requests';
import { httpError, jsonResponse, type ApiResult, type RelayEvent } from '../../middleware/http';
import { acceptRequest, apiHandler, idempotencyKeyOf, type AcceptDeps, type ApiHandler } from './chain';
import { acceptDepsFromEnv, jobQueueFromEnv } from './deps';

const postSetSpotPrice = async (event: RelayEvent, deps: AcceptDeps): Promise<ApiResult> => {
  const parsed = parseBody(SetSpotPriceBodySchema, event.jsonBody ?? {});
  if (!parsed.ok) throw httpError(400, parsed.error);
  const problem = callbackUrlProblem(parsed.value.callback_url, deps.env.ALLOW_PRIVATE_CALLBACKS);
  if (problem) throw httpError(400, problem);
  const idempotencyKey = idempotencyKeyOf(event);
  const input: SetSpotPriceInput = {
    order_id: parsed.value.order_id,
    desired_price: parsed.value.desired_price,
    ...(parsed.value.callback_url !== undefined ? { callback_url: parsed.value.callback_url } : {}),
  };
  const { taskId, replayed } = await acceptRequest(deps, { kind: 'set-spot-price', input }, { source: 'webhook' }, idempotencyKey);
  return jsonResponse(
    202,
    { status: 'queued', task_id: taskId, message: `Spot price change of order ${input.order_id} to ${input.desired_price} queued` },
    replayed ? { 'Idempotent-Replayed': 'true' } : {},
  );
};

/** The handler with injected deps (tests); `handler` wires the real adapters. */
export const createSetSpotPriceHandler = (deps: () => AcceptDeps): ApiHandler =>
  apiHandler({ routeId: 'SetSpotPrice', deps, json: true }, postSetSpotPrice);

export const handler = createSetSpotPriceHandler(acceptDepsFromEnv({ queue: jobQueueFromEnv }));
