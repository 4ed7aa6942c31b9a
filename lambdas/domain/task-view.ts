/** What GET /webhook/tasks/{task_id} shows of a task record. Pure. */
import type { TaskHistoryEntry, TaskKind, TaskRecord, TaskResult, TaskState } from './task';

/** The public view: no request, origin or internal workflow markers (they may hold callback or Slack URLs). */
export interface TaskView {
  readonly task_id: string;
  readonly kind: TaskKind;
  readonly state: TaskState;
  readonly result?: TaskResult;
  readonly created_at: string;
  readonly updated_at: string;
  readonly finished_at?: string;
  /** A waiting standing order (issue 23): when its wait ends (Unix seconds). */
  readonly waiting_until?: number;
  /** A waiting standing order: its 1-based place among the tasks waiting for the same GPU type. */
  readonly position?: number;
  /** Outbid recovery (issue 23), once it has history: the task's current order (a replacement moves it). */
  readonly order_id?: number;
  /** Outbid recovery: each step, oldest first ({at, event, order_id, ...}). */
  readonly history?: readonly TaskHistoryEntry[];
}

/** Task ids are UUIDs: random ones from the API, UUIDv5 ones derived by price alerts. */
export const TASK_ID_PATTERN = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

export const isTaskId = (value: string | undefined): value is string =>
  typeof value === 'string' && TASK_ID_PATTERN.test(value);

export const toTaskView = (record: TaskRecord, position?: number): TaskView => ({
  task_id: record.task_id,
  kind: record.kind,
  state: record.state,
  ...(record.result !== undefined ? { result: record.result } : {}),
  created_at: record.created_at,
  updated_at: record.updated_at,
  ...(record.finished_at !== undefined ? { finished_at: record.finished_at } : {}),
  ...(record.state === 'waiting' && record.waiting_until !== undefined ? { waiting_until: record.waiting_until } : {}),
  ...(record.state === 'waiting' && position !== undefined ? { position } : {}),
  ...(record.history !== undefined && record.history.length > 0
    ? { ...(record.order_id !== undefined ? { order_id: record.order_id } : {}), history: record.history }
    : {}),
});
