/** GET /webhook/tasks/{task_id}: signed (over the path), rate limited; the task's state, result and times. */
import { mayTouchOrder, taskCallerOf } from '../../domain/teams/caller-keys';
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
  return jsonResponse(200, toTaskView(record, position));
};

/** The handler with injected deps (tests); `handler` wires the real adapters. */
export const createGetTaskHandler = (deps: () => GetTaskDeps): ApiHandler =>
  apiHandler({ routeId: 'GetTask', deps }, getTask);

export const handler = createGetTaskHandler(taskLookupDepsFromEnv());
