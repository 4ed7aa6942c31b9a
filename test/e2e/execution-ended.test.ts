/**
 * The safety net end to end (issue 30: its grants were exercised by no e2e test): an execution
 * stopped from outside its own Catch (StopExecution) ends ABORTED; the local runtime delivers the
 * EventBridge status-change event through the function's Lambda permission, and the execution-ended
 * function, with its own role, cancels the placed order and fails the task, so the caller gets
 * exactly one failure result.
 */
import { SFNClient, StopExecutionCommand } from '@aws-sdk/client-sfn';
import { LOCAL_STATE_MACHINE_ARN } from '../../local/runtime';
import { e2eCalls, isResult, json } from '../helpers/e2e-calls';
import { startTestRuntime } from '../helpers/local-runtime';
import type { LocalRuntime } from '../helpers/local-runtime';
import { startReceiver, type Receiver } from '../helpers/receivers';

const WAIT_MS = 45_000;

describe('Local runtime: the execution-ended safety net', () => {
  let runtime: LocalRuntime;
  let callbacks: Receiver;
  const { sim, until, create } = e2eCalls(
    () => runtime,
    () => callbacks,
    WAIT_MS,
  );

  beforeAll(async () => {
    callbacks = await startReceiver();
    // Orders never become ready: the execution keeps polling until it is stopped.
    runtime = await startTestRuntime({ dialect: 'spec', simulator: { readyDelayMs: 3_600_000 } });
  });
  afterAll(async () => {
    await runtime?.close();
    await callbacks?.close();
  });

  it('fails a task whose execution was stopped, cancels its order and sends one result', async () => {
    // Prepare: a task whose order is placed and not ready
    const taskId = await create('aborted', { gpu_type: 'RTX 4090' });
    await until(() => sim().orders().length === 1, 'the order placed');
    const sfn = new SFNClient({
      endpoint: runtime.env.AWS_ENDPOINT_URL_SFN,
      region: 'us-east-1',
      credentials: { accessKeyId: 'local', secretAccessKey: 'local' },
    });

    // Act
    await sfn.send(
      new StopExecutionCommand({
        executionArn: `${LOCAL_STATE_MACHINE_ARN.replace(':stateMachine:', ':execution:')}:${taskId}`,
      }),
    );
    const result = json(await callbacks.waitFor((r) => isResult(r, '/aborted'), WAIT_MS));
    sfn.destroy();

    // Assert
    expect(result).toMatchObject({ success: false, error: expect.stringContaining('aborted') });
    await until(() => sim().orders()[0]?.end_reason === 'cancelled', 'the placed order cancelled');
    expect(callbacks.requests.filter((r) => isResult(r, '/aborted'))).toHaveLength(1);
  });
});
