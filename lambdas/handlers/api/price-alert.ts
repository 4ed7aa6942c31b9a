/** POST /webhook/price-alert: signed; queues a single price check (SQS). */
import { callbackUrlProblem, normalizePriceAlert, parseBody, PriceAlertBodySchema } from '../../domain/requests';
import { httpError, jsonResponse, type ApiResult, type RelayEvent } from '../../middleware/http';
import { acceptRequest, apiHandler, idempotencyKeyOf, type AcceptDeps, type ApiHandler } from './chain';
import { acceptDepsFromEnv, jobQueueFromEnv } from './deps';

const postPriceAlert = async (event: RelayEvent, deps: AcceptDeps): Promise<ApiResult> => {
  const parsed = parseBody(PriceAlertBodySchema, event.jsonBody ?? {});
  if (!parsed.ok) throw httpError(400, parsed.error);
  const problem = callbackUrlProblem(parsed.value.callback_url, deps.env.ALLOW_PRIVATE_CALLBACKS);
  if (problem) throw httpError(400, problem);
  const idempotencyKey = idempotencyKeyOf(event);
  const input = normalizePriceAlert(parsed.value, { image: deps.env.DEFAULT_IMAGE });
  const { taskId, replayed } = await acceptRequest(deps, { kind: 'price-alert', input }, { source: 'webhook' }, idempotencyKey);
  return jsonResponse(
    202,
    { status: 'queued', task_id: taskId, message: `Price alert for ${input.gpu_type} at or under $${input.target_price}/hr queued` },
    replayed ? { 'Idempotent-Replayed': 'true' } : {},
  );
};

/** The handler with injected deps (tests); `handler` wires the real adapters. */
export const createPriceAlertHandler = (deps: () => AcceptDeps): ApiHandler =>
  apiHandler({ routeId: 'PriceAlert', deps, json: true }, postPriceAlert);

export const handler = createPriceAlertHandler(acceptDepsFromEnv({ queue: jobQueueFromEnv }));
