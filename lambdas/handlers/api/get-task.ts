/** GET /webhook/tasks/{task_id}: signed (over the path), rate limited; the task's state, result and times. */
import { DEFAULT_KEY_NAME, keyNameOf, mayTouchOrder, taskCallerOf } from '../../domain/teams/caller-keys';
import { withJupyterToken } from '../../domain/access/order-access';
import type { TaskRecord } from '../../domain/task';
import type { TaskRepository, WaitingTasks } from '../../domain/ports';
import { queuePosition } from '../../domain/recovery/standing-orders';
import { isTaskId, toTaskView } from '../../domain/requests/task-view';
import { httpError, jsonResponse, type ApiResult, type RelayEvent } from '../../middleware/http';
import { apiHandler, type ApiHandler, type ChainDeps } from './chain';
import { taskLookupDepsFromEnv } from './deps';

export interface GetTaskDeps extends ChainDeps {
  readonly tasks: TaskRepository;
  /** The standing-order queue (issue 23): a waiting task's position. */
  readonly waiting?: Pick<WaitingTasks, 'get' | 'list'>;
}

/** A waiting task's place: its entry, then its GPU type's part of the queue (one index Query, not the whole queue). */
const positionOf = async (waiting: Pick<WaitingTasks, 'get' | 'list'>, taskId: string): Promise<number | undefined> => {
  const own = await waiting.get(taskId);
  return own ? queuePosition(await waiting.list(own.request.gpu_type), taskId) : undefined;
};

const getTask = async (event: RelayEvent, deps: GetTaskDeps): Promise<ApiResult> => {
  // API Gateway fills pathParameters; a hand-built event may only have the path.
  const taskId = event.pathParameters?.task_id ?? /^\/webhook\/tasks\/([^/]+)$/.exec(event.rawPath ?? '')?.[1];
  if (!isTaskId(taskId)) throw httpError(400, 'Invalid task_id');
  const record = await deps.tasks.get(taskId.toLowerCase());
  // A key that does not see every order sees only its own tasks (issue 24); others' are not found.
  if (!record || !mayTouchOrder(event.caller && taskCallerOf(event.caller), record.origin.caller?.key))
    throw httpError(404, 'Task not found');
  const position =
    record.state === 'waiting' && deps.waiting ? await positionOf(deps.waiting, record.task_id) : undefined;
  return jsonResponse(200, toTaskView(await withOwnSecrets(record, event, deps), position), {
    'Cache-Control': 'no-store',
  });
};

/**
 * The task's own key (not an admin seeing every task) also sees its order's Jupyter token (issue 37
 * §3), opened from its seal while the order's lease lasts; everyone else sees the result without it.
 */
const withOwnSecrets = async (record: TaskRecord, event: RelayEvent, deps: GetTaskDeps): Promise<TaskRecord> => {
  const result = record.result;
  if (!result || !('access' in result) || !result.access?.jupyter) return record;
  const ownKey = (event.caller?.key ?? DEFAULT_KEY_NAME) === keyNameOf(record.origin.caller);
  if (!ownKey) return record;
  const token = (await deps.tasks.orderAccess?.(record.task_id))?.jupyter_token;
  return token === undefined
    ? record
    : { ...record, result: { ...result, access: withJupyterToken(result.access, token) } };
};

/** The handler with injected deps (tests); `handler` wires the real adapters. */
export const createGetTaskHandler = (deps: () => GetTaskDeps): ApiHandler =>
  apiHandler({ routeId: 'GetTask', deps }, getTask);

export const handler = createGetTaskHandler(taskLookupDepsFromEnv());
