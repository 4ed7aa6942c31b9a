/** POST /webhook/status: signed; the body is optional (empty = `{}`); queues a status job (SQS). */
import { normalizeStatus } from '../../domain/requests/request-rules';
import { StatusBodySchema } from '../../http/task-bodies/status';
import { queuedRoute } from './queued-route';

/** The handler; tests inject deps, `handler` wires the real adapters. */
export const createStatusHandler = queuedRoute({
  routeId: 'Status',
  kind: 'status',
  body: StatusBodySchema,
  input: (body) => normalizeStatus(body),
  // No message: the spec's status answer carries status and task_id only.
});

export const handler = createStatusHandler();
