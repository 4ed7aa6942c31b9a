/**
 * The WorkflowStarter port in memory: records starts, or throws `fail`. Like Step Functions (and
 * SfnWorkflowStarter), a second start under a name already used starts nothing.
 */
import type { CreateOrderWorkflowInput, WorkflowStarter } from '../../lambdas/domain/ports';

export class FakeWorkflow implements WorkflowStarter {
  public readonly started: { taskId: string; input: CreateOrderWorkflowInput }[] = [];
  /** Every call, including the ones that started nothing. */
  public readonly calls: string[] = [];
  public fail: Error | undefined;
  public async start(taskId: string, input: CreateOrderWorkflowInput): Promise<void> {
    this.calls.push(taskId);
    if (this.fail) throw this.fail;
    if (this.started.some((s) => s.taskId === taskId)) return;
    this.started.push({ taskId, input });
  }
}
