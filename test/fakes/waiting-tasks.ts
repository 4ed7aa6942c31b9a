/** The WaitingTasks port in memory, with the adapter's conditional removal (by round) and its caps. */
import type { WaitingCaps, WaitingTask, WaitingTasks } from '../../lambdas/domain/ports';
import { byArrival, queueKey, waitingCapText } from '../../lambdas/domain/recovery/standing-orders';
import { DEFAULT_KEY_NAME } from '../../lambdas/domain/teams/caller-keys';

export class FakeWaitingTasks implements WaitingTasks {
  public readonly entries = new Map<string, WaitingTask>();
  public lists = 0;
  public async add(task: WaitingTask): Promise<void> {
    this.entries.set(task.task_id, task);
  }
  public async admit(task: WaitingTask, caps: WaitingCaps): Promise<string | undefined> {
    const all = [...this.entries.values()].filter((e) => e.task_id !== task.task_id);
    // The default key (no key_name) has a per-key cap too (issue 38 §1).
    const key = task.key_name ?? DEFAULT_KEY_NAME;
    if (all.filter((e) => (e.key_name ?? DEFAULT_KEY_NAME) === key).length >= caps.perKey)
      return waitingCapText({ cap: caps.perKey, keyName: key });
    if (all.length >= caps.total) return waitingCapText({ cap: caps.total });
    this.entries.set(task.task_id, task);
    return undefined;
  }
  public async get(taskId: string): Promise<WaitingTask | undefined> {
    return this.entries.get(taskId);
  }
  public async list(gpuType?: string): Promise<readonly WaitingTask[]> {
    this.lists += 1;
    return [...this.entries.values()]
      .filter((e) => gpuType === undefined || queueKey(e.request.gpu_type) === queueKey(gpuType))
      .sort(byArrival);
  }
  public async remove(taskId: string, round?: number): Promise<boolean> {
    const entry = this.entries.get(taskId);
    if (!entry || (round !== undefined && entry.round !== round)) return false;
    this.entries.delete(taskId);
    return true;
  }
}
