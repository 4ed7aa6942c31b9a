/** POST /webhook/status: signed; the body is optional (empty = `{}`); queues a status job (SQS). */
import { callbackUrlProblem, normalizeStatus, parseBody, StatusBodySchema } from '../../domain/requests';
import { httpError, jsonResponse, type ApiResult, type RelayEvent } from '../../middleware/http';
import { acceptRequest, apiHandler, idempotencyKeyOf, type AcceptDeps, type ApiHandler } from './chain';
import { acceptDepsFromEnv, jobQueueFromEnv } from './deps';

const postStatus = async (event: RelayEvent, deps: AcceptDeps): Promise<ApiResult> => {
  const parsed = parseBody(StatusBodySchema, event.jsonBody ?? {});
  if (!parsed.ok) throw httpError(400, parsed.error);
  const problem = callbackUrlProblem(parsed.value.callback_url, deps.env.ALLOW_PRIVATE_CALLBACKS);
  if (problem) throw httpError(400, problem);
  const idempotencyKey = idempotencyKeyOf(event);
  const { taskId, replayed } = await acceptRequest(deps, { kind: 'status', input: normalizeStatus(parsed.value) }, { source: 'webhook' }, idempotencyKey);
  // The spec's status answer carries status and task_id only.
  return jsonResponse(202, { status: 'queued', task_id: taskId }, replayed ? { 'Idempotent-Replayed': 'true' } : {});
};

/** The handler with injected deps (tests); `handler` wires the real adapters. */
export const createStatusHandler = (deps: () => AcceptDeps): ApiHandler =>
  apiHandler({ routeId: 'Status', deps, json: true }, postStatus);

export const handler = createStatusHandler(acceptDepsFromEnv({ queue: jobQueueFromEnv }));
