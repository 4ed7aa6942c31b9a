/**
 * What GET /webhook/tasks/{task_id} shows of a task record. Pure. The view is declared once, as
 * {@link TaskViewShape}: its type is inferred from it and the OpenAPI document's `TaskView` is
 * generated from it (lambdas/http/response-schemas.ts), so a field cannot be in one and not the other.
 */
import * as z from 'zod/mini';
import { TaskHistoryEntrySchema, TaskKindSchema, TaskStateSchema } from '../task';
import { builtOnFirstUse } from '../zod-texts';
import type { TaskHistoryEntry, TaskRecord, TaskResult } from '../task';

/** The public view: no request, origin or internal workflow markers (they may hold callback or Slack URLs). */
export const TaskViewShape = builtOnFirstUse(() =>
  z.object({
    task_id: z.string(),
    kind: TaskKindSchema(),
    state: TaskStateSchema(),
    /** The result payload (order-relay.md §2.3) once the task ended. */
    result: z.optional(z.record(z.string(), z.unknown())),
    created_at: z.string(),
    updated_at: z.string(),
    finished_at: z.optional(z.string()),
    /** A waiting standing order (issue 23): when its wait ends (Unix seconds). */
    waiting_until: z.optional(z.number()),
    /** A waiting standing order: its 1-based place among the tasks waiting for the same GPU type. */
    position: z.optional(z.int()),
    /** Outbid recovery (issue 23), once it has history: the task's current order (a replacement moves it). */
    order_id: z.optional(z.number()),
    /** Outbid recovery: each step, oldest first ({at, event, order_id, ...}). */
    history: z.optional(z.array(TaskHistoryEntrySchema())),
  }),
);

/** The view's type, from {@link TaskViewShape}; `result` is typed as the task results are. */
export type TaskView = Readonly<Omit<z.infer<ReturnType<typeof TaskViewShape>>, 'result' | 'history'>> & {
  readonly result?: TaskResult;
  readonly history?: readonly TaskHistoryEntry[];
};

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
