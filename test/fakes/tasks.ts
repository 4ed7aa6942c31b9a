/** The TaskRepository port in memory, with the adapter's once-only finish. */
import { TaskAlreadyExistsError } from '../../lambdas/domain/errors';
import type { SealedTaskInput, TaskRepository } from '../../lambdas/domain/ports';
import type { TaskRecord, TaskResult, TaskState } from '../../lambdas/domain/task';
import { aTaskRecord } from './builders';

type TaskUpdate = Parameters<TaskRepository['update']>[1];

export interface FakeTasksOptions {
  /**
   * `finish` of a task with no record succeeds (and is recorded), as for jobs run without ingress.
   * @default false - it returns false, like the adapter
   */
  readonly finishUnknown?: boolean;
}

const isFinal = (r: TaskRecord): boolean => r.state === 'succeeded' || r.state === 'failed';

export class FakeTasks implements TaskRepository {
  public readonly records = new Map<string, TaskRecord>();
  /** What `create` sealed beside each record (the container env). */
  public readonly sealed = new Map<string, SealedTaskInput>();
  public readonly updates: { taskId: string; state?: TaskState }[] = [];
  /** The finishes that moved a task to a final state. */
  public readonly finishes: { taskId: string; state: TaskState; result: TaskResult }[] = [];
  public readonly removed: string[] = [];
  public failCreate: Error | undefined;
  private readonly finishUnknown: boolean;

  public constructor(options: FakeTasksOptions = {}) {
    this.finishUnknown = options.finishUnknown ?? false;
  }

  /** Seeds a queued record as ingress would. */
  public seed(taskId = 'task-1', patch: Partial<TaskRecord> = {}): void {
    this.records.set(taskId, aTaskRecord(taskId, patch));
  }

  public async create(record: TaskRecord, sealed?: SealedTaskInput): Promise<void> {
    if (this.failCreate) throw this.failCreate;
    if (this.records.has(record.task_id)) throw new TaskAlreadyExistsError(record.task_id);
    this.records.set(record.task_id, record);
    if (sealed) this.sealed.set(record.task_id, sealed);
  }

  public async get(taskId: string): Promise<TaskRecord | undefined> {
    return this.records.get(taskId);
  }

  /** Merges the defined fields into a non-final record. */
  public async update(taskId: string, fields: TaskUpdate, now: number): Promise<void> {
    this.updates.push({ taskId, state: fields.state });
    const r = this.records.get(taskId);
    if (!r || isFinal(r)) return;
    const defined = Object.fromEntries(Object.entries(fields).filter(([, v]) => v !== undefined));
    this.records.set(taskId, { ...r, ...defined, updated_at: new Date(now).toISOString() });
  }

  /** The finisher names passed to `finish`, in call order. */
  public readonly finishers: (string | undefined)[] = [];
  /** Per task: the named finisher whose write made it final, and whether it marked the result delivered. */
  public readonly finishedBy = new Map<string, { finisher?: string; delivered: boolean }>();

  public async finish(
    taskId: string,
    state: 'succeeded' | 'failed',
    result: TaskResult,
    now: number,
    finisher?: string,
  ): Promise<boolean> {
    this.finishers.push(finisher);
    const r = this.records.get(taskId);
    if (r && isFinal(r)) {
      // As the adapter: a named finisher's retry wins again until it marked the result delivered.
      const by = this.finishedBy.get(taskId);
      return finisher !== undefined && by?.finisher === finisher && !by.delivered;
    }
    if (!r && !this.finishUnknown) return false;
    this.finishedBy.set(taskId, { ...(finisher !== undefined ? { finisher } : {}), delivered: false });
    this.finishes.push({ taskId, state, result });
    const at = new Date(now).toISOString();
    if (r) this.records.set(taskId, { ...r, state, result, updated_at: at, finished_at: at });
    return true;
  }

  public async markDelivered(taskId: string): Promise<void> {
    const by = this.finishedBy.get(taskId);
    if (by) by.delivered = true;
  }

  public async remove(taskId: string): Promise<void> {
    this.removed.push(taskId);
    this.records.delete(taskId);
    this.sealed.delete(taskId);
  }
}
