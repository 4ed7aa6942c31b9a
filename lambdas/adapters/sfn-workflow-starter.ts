/** WorkflowStarter over Step Functions: one execution per task, named by the task id. */
import { StartExecutionCommand, type SFNClient } from '@aws-sdk/client-sfn';
import type { CreateOrderWorkflowInput, WorkflowStarter } from '../domain/ports';

/** Starts the create-order state machine. Other failures than a duplicate name throw (ingress answers 503). */
export class SfnWorkflowStarter implements WorkflowStarter {
  public constructor(
    private readonly client: SFNClient,
    private readonly stateMachineArn: string,
  ) {}

  public async start(taskId: string, input: CreateOrderWorkflowInput, executionName: string = taskId): Promise<void> {
    try {
      await this.client.send(
        new StartExecutionCommand({
          stateMachineArn: this.stateMachineArn,
          // Execution names are unique per state machine (90 days): a repeated start cannot run the order twice.
          name: executionName,
          input: JSON.stringify(input),
        }),
      );
    } catch (error) {
      // Already running or done under this name: the hand-off already happened.
      if (error instanceof Error && error.name === 'ExecutionAlreadyExists') return;
      throw error;
    }
  }
}
