/**
 * The task-accepting routes: `acceptRequest`, the accept step they and Slack share, and
 * `acceptRoute`, the one builder every webhook accept route is a call of (parse the JSON body,
 * check callback_url, read Idempotency-Key, build the task input, accept it, answer 202).
 */
import { randomUUID } from 'node:crypto';
import type * as z from 'zod/mini';
import { SOFT_TIME_LIMIT_SECONDS } from '../../../contract/limits';
import type { RelayEnv } from '../../adapters/env';
import { countMetric, logger, MetricName, tagTask } from '../../adapters/observability';
import { acceptTask, type SignedRequestKey } from '../../domain/requests/accept-task';
import { WaitingQueueFullError } from '../../domain/errors';
import { REPLAY_WINDOW_SECONDS } from '../../domain/signing';
import { DEFAULT_KEY_NAME, taskCallerOf, type TaskCaller } from '../../domain/teams/caller-keys';
import { callbackUrlProblem, parseBody } from '../../http/request-fields';
import type { TaskKind, TaskOrigin, TaskRequest } from '../../domain/task';
import { headerValue, httpError, jsonResponse, type ApiResult, type RelayEvent } from '../../middleware/http';
import { SIGNED_REQUEST_CLOCK_MARGIN_SECONDS } from '../../middleware/signature-claim';
import { SIGNATURE_HEADER, TIMESTAMP_HEADER } from '../../middleware/verify-signature';
import type { AcceptDeps } from './accept-deps';
import { apiHandler, type ApiHandler, type RouteId } from './chain';
import { acceptDepsFromEnv, type HandOffs } from './deps';
import { idempotencyKeyOf } from './idempotency-key';

/**
 * Records and hands off a task (use case `acceptTask`), tags the logs with its id and counts it.
 * Throws HandOffError (→ 503) when nothing could be queued.
 */
export const acceptRequest = async (
  deps: AcceptDeps,
  request: TaskRequest,
  origin: TaskOrigin,
  idempotencyKey: string | undefined,
  options: { readonly idempotencyTtlSeconds?: number; readonly signedRequest?: SignedRequestKey } = {},
): Promise<{ taskId: string; replayed: boolean }> => {
  const outcome = await acceptTask(deps, request, {
    taskId: (deps.newTaskId ?? randomUUID)(),
    now: (deps.now ?? Date.now)(),
    origin,
    idempotencyKey,
    ...(options.idempotencyTtlSeconds !== undefined ? { idempotencyTtlSeconds: options.idempotencyTtlSeconds } : {}),
    ...(options.signedRequest !== undefined ? { signedRequest: options.signedRequest } : {}),
    timing: {
      poll_interval_seconds: deps.env.ORDER_POLL_INTERVAL_SECONDS,
      ready_timeout_seconds: deps.env.ORDER_READY_TIMEOUT_SECONDS,
    },
    softLimitSeconds: SOFT_TIME_LIMIT_SECONDS,
  });
  tagTask(outcome.taskId);
  if (outcome.replayed) {
    logger.info('repeated request; returning the first task', { kind: request.kind });
  } else {
    countMetric(MetricName.TasksAccepted, { name: 'Kind', value: request.kind });
    logger.info('task accepted', { kind: request.kind, source: origin.source });
  }
  return outcome;
};

// The clock margin is the signature claim's (middleware/signature-claim.ts); kept importable from here.
export { SIGNED_REQUEST_CLOCK_MARGIN_SECONDS };

/**
 * The key of a signed request that carried X-Webhook-Timestamp (verified by the chain before the
 * handler runs): route, timestamp and signature (lowercased: hex case must not make a copy new). It
 * binds until the timestamp is refused anyway (REPLAY_WINDOW_SECONDS after it) plus a clock margin.
 * Undefined without a timestamp: such requests (allowed locally by the spec) are not deduplicated.
 */
export const signedRequestKeyOf = (
  event: RelayEvent,
  routeId: RouteId,
  nowMs: number,
): SignedRequestKey | undefined => {
  const timestamp = headerValue(event, TIMESTAMP_HEADER)?.trim();
  const signature = headerValue(event, SIGNATURE_HEADER)?.trim().toLowerCase();
  if (!timestamp || !signature || !/^\d{1,12}$/.test(timestamp)) return undefined;
  const until = Number(timestamp) + REPLAY_WINDOW_SECONDS + SIGNED_REQUEST_CLOCK_MARGIN_SECONDS;
  return { key: `${routeId}:${timestamp}:${signature}`, ttlSeconds: Math.max(1, until - Math.floor(nowMs / 1000)) };
};

/** The task input of a kind. */
export type TaskInputOf<K extends TaskKind> = Extract<TaskRequest, { readonly kind: K }>['input'];

/** A body an accept route takes: any JSON object with an optional callback_url. */
export type AcceptBodySchema = z.core.$ZodType<{ readonly callback_url?: string | undefined }>;

/** What makes one accept route. */
export interface AcceptRouteSpec<K extends TaskKind, S extends AcceptBodySchema> {
  readonly routeId: RouteId;
  readonly kind: K;
  /** The JSON body's schema; its first issue is the 400's message. */
  readonly body: S;
  /** The task input from the valid body (env: the configured defaults). */
  readonly input: (body: z.infer<S>, env: RelayEnv) => TaskInputOf<K>;
  /** A refusal of the built input (→ 400, nothing queued), given the verified caller; undefined = accepted. */
  readonly refuse?: (input: TaskInputOf<K>, env: RelayEnv, caller: TaskCaller | undefined) => string | undefined;
  /** The 202's `message`; none → the body is `{status, task_id}` only. */
  readonly message?: (input: TaskInputOf<K>) => string;
  /**
   * Where the task goes: `{ workflow: workflowStarterFromEnv }` or `{ queue: jobQueueFromEnv }`. The
   * route file passes the factory itself, so its bundle carries only that SDK client.
   */
  readonly handOff: HandOffs;
}

/**
 * Builds an accept route's handler: body → 400 on its first issue, callback_url policy → 400,
 * Idempotency-Key → 400, then the task is accepted and answered 202 (`Idempotent-Replayed: true` on
 * a repeat: the same Idempotency-Key, or a copy of the same signed timestamped request). `deps` defaults to the production wiring of `spec.handOff` (tests inject fakes).
 */
export const acceptRoute = <K extends TaskKind, S extends AcceptBodySchema>(
  spec: AcceptRouteSpec<K, S>,
  deps: () => AcceptDeps = acceptDepsFromEnv(spec.handOff),
): ApiHandler =>
  apiHandler(
    { routeId: spec.routeId, deps, json: true },
    async (event: RelayEvent, d: AcceptDeps): Promise<ApiResult> => {
      const parsed = parseBody(spec.body, event.jsonBody ?? {});
      if (!parsed.ok) throw httpError(400, parsed.error);
      const problem = callbackUrlProblem(parsed.value.callback_url, d.env.ALLOW_PRIVATE_CALLBACKS);
      if (problem) throw httpError(400, problem);
      const headerKey = idempotencyKeyOf(event);
      // A caller key's Idempotency-Keys are its own: another key reusing one gets its own task.
      const idempotencyKey =
        headerKey !== undefined && event.caller && event.caller.key !== DEFAULT_KEY_NAME
          ? `${event.caller.key}/${headerKey}`
          : headerKey;
      const input = spec.input(parsed.value, d.env);
      // The caller key travels with the task (issue 24); the default key leaves the origin as the spec's.
      const caller = event.caller ? taskCallerOf(event.caller) : undefined;
      const refusal = spec.refuse?.(input, d.env, caller);
      if (refusal) throw httpError(400, refusal);
      const request = { kind: spec.kind, input } as TaskRequest;
      const signedRequest = signedRequestKeyOf(event, spec.routeId, (d.now ?? Date.now)());
      const { taskId, replayed } = await acceptRequest(
        d,
        request,
        { source: 'webhook', ...(caller ? { caller } : {}) },
        idempotencyKey,
        signedRequest ? { signedRequest } : {},
      ).catch((error: unknown) => {
        // Over a cap of the waiting queue (issue 29 §5): 429 with the cap's text, nothing queued.
        if (error instanceof WaitingQueueFullError) throw httpError(429, error.message);
        throw error;
      });
      return jsonResponse(
        202,
        { status: 'queued', task_id: taskId, ...(spec.message ? { message: spec.message(input) } : {}) },
        replayed ? { 'Idempotent-Replayed': 'true' } : {},
      );
    },
  );
