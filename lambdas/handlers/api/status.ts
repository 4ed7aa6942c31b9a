/** POST /webhook/status: signed; the body is optional (empty = `{}`); queues a status job (SQS). */
import { normalizeStatus } from '../../domain/requests/request-rules';
import { StatusBodySchema } from '../../http/task-requests';
import type { AcceptDeps } from './accept-deps';
import { acceptRoute } from './accept-route';
import type { ApiHandler } from './chain';
import { jobQueueFromEnv } from './deps';

/** The handler; tests inject deps, `handler` wires the real adapters. */
export const createStatusHandler = (deps?: () => AcceptDeps): ApiHandler =>
  acceptRoute(
    {
      routeId: 'Status',
      kind: 'status',
      body: StatusBodySchema,
      input: (body) => normalizeStatus(body),
      // No message: the spec's status answer carries status and task_id only.
      handOff: { queue: jobQueueFromEnv },
    },
    deps,
  );

export const handler = createStatusHandler();
