/** The WorkflowStarter port in memory: records starts, or throws `fail`. */
import type { CreateOrderWorkflowInput, WorkflowStarter } from '../../lambdas/domain/ports';

export class FakeWorkflow implements WorkflowStarter {
  public readonly started: { taskId: string; input: CreateOrderWorkflowInput }[] = [];
  public fail: Error | undefined;
  public async start(taskId: string, input: CreateOrderWorkflowInput): Promise<void> {
    if (this.fail) throw this.fail;
    this.started.push({ taskId, input });
  }
}
