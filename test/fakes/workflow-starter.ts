/**
 * The WorkflowStarter port in memory: records starts, or throws `fail`. Like Step Functions (and
 * SfnWorkflowStarter), a second start under a name already used starts nothing.
 */
import type { CreateOrderWorkflowInput, WorkflowStarter } from '../../lambdas/domain/ports';

export class FakeWorkflow implements WorkflowStarter {
  /** `name`: only for a start that named its execution (a resumed standing order). */
  public readonly started: { taskId: string; input: CreateOrderWorkflowInput; name?: string }[] = [];
  /** Every call, including the ones that started nothing. */
  public readonly calls: string[] = [];
  public fail: Error | undefined;
  public async start(taskId: string, input: CreateOrderWorkflowInput, executionName?: string): Promise<void> {
    this.calls.push(taskId);
    if (this.fail) throw this.fail;
    const name = executionName ?? taskId;
    if (this.started.some((s) => (s.name ?? s.taskId) === name)) return;
    this.started.push({ taskId, input, ...(executionName !== undefined ? { name: executionName } : {}) });
  }
}
