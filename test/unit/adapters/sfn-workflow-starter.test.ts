import { ExecutionAlreadyExists, SFNClient, SFNServiceException, StartExecutionCommand } from '@aws-sdk/client-sfn';
import { mockClient } from 'aws-sdk-client-mock';
import { SfnWorkflowStarter } from '../../../lambdas/adapters/sfn-workflow-starter';
import type { CreateOrderWorkflowInput } from '../../../lambdas/domain/ports';

const ARN = 'arn:aws:states:us-east-1:123456789012:stateMachine:CreateOrder';
const input: CreateOrderWorkflowInput = {
  task_id: 'task-1',
  request: { gpu_type: 'RTX4090', image: 'img', currency: 'NATIVE-Blockchain', ports: { '22': 'tcp' }, use_spot: true },
  origin: { source: 'webhook' },
  timing: { poll_interval_seconds: 5, ready_timeout_seconds: 120, soft_deadline: 1_700_000_300_000 },
};

describe('Adapter: SfnWorkflowStarter', () => {
  const sfn = mockClient(SFNClient);
  afterEach(() => sfn.reset());
  afterAll(() => sfn.restore());

  it('starts an execution named by the task id with the input as JSON', async () => {
    // Prepare
    sfn.on(StartExecutionCommand).resolves({ executionArn: 'arn:exec', startDate: new Date() });
    // Act
    await new SfnWorkflowStarter(new SFNClient({}), ARN).start('task-1', input);
    // Assess
    const calls = sfn.commandCalls(StartExecutionCommand);
    expect(calls).toHaveLength(1);
    expect(calls[0].args[0].input).toEqual({ stateMachineArn: ARN, name: 'task-1', input: JSON.stringify(input) });
  });

  it('treats ExecutionAlreadyExists as started', async () => {
    sfn.on(StartExecutionCommand).rejects(new ExecutionAlreadyExists({ message: 'exists', $metadata: {} }));
    await expect(new SfnWorkflowStarter(new SFNClient({}), ARN).start('task-1', input)).resolves.toBeUndefined();
  });

  it('throws other failures', async () => {
    sfn
      .on(StartExecutionCommand)
      .rejects(
        new SFNServiceException({ name: 'ServiceUnavailable', $fault: 'server', message: 'down', $metadata: {} }),
      );
    await expect(new SfnWorkflowStarter(new SFNClient({}), ARN).start('task-1', input)).rejects.toThrow('down');
  });
});
