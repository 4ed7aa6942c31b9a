/** The WaitingTasks port in memory, with the adapter's conditional removal (by round). */
import type { WaitingTask, WaitingTasks } from '../../lambdas/domain/ports';
import { byArrival } from '../../lambdas/domain/standing-orders';

export class FakeWaitingTasks implements WaitingTasks {
  public readonly entries = new Map<string, WaitingTask>();
  public lists = 0;
  public async add(task: WaitingTask): Promise<void> {
    this.entries.set(task.task_id, task);
  }
  public async list(): Promise<readonly WaitingTask[]> {
    this.lists += 1;
    return [...this.entries.values()].sort(byArrival);
  }
  public async remove(taskId: string, round?: number): Promise<boolean> {
    const entry = this.entries.get(taskId);
    if (!entry || (round !== undefined && entry.round !== round)) return false;
    this.entries.delete(taskId);
    return true;
  }
}
