/**
 * LocalStepFunctions: the synthesized definition with scripted handlers, driven through the SDK
 * (JSON 1.0 protocol) the way the unchanged SfnWorkflowStarter drives it in `npm start`.
 */
import { DescribeExecutionCommand, SFNClient, StartExecutionCommand, StopExecutionCommand } from '@aws-sdk/client-sfn';
import { synthesizeWorkflowAsl, type WorkflowAsl } from '../../local/asl';
import { LocalStepFunctions, type ExecutionStatusChangeEvent } from '../../local/stepfunctions';
import { SfnWorkflowStarter } from '../../lambdas/adapters/sfn-workflow-starter';
import { WORKFLOW_TASKS } from '../../contract/routes';
import type { CreateOrderWorkflowInput } from '../../lambdas/domain/ports';

const input = (taskId: string): CreateOrderWorkflowInput => ({
  task_id: taskId,
  request: { gpu_type: '4090', image: 'img', currency: 'NATIVE-Blockchain', ports: { '22': 'tcp' }, use_spot: true },
  origin: { source: 'webhook' },
  timing: { poll_interval_seconds: 1, ready_timeout_seconds: 120, soft_deadline: Math.floor(Date.now() / 1000) + 300 },
});

/** Handlers that walk the happy path; CheckOrder is ready on its `readyOn`-th call. */
const scripted = (calls: string[], opts: { readyOn?: number; checkOrder?: () => Promise<unknown> } = {}) => {
  const checks = new Map<string, number>();
  return {
    FindServer: async () => {
      calls.push('FindServer');
      return { server: { id: 1, gpu_array: ['g'], price_usd: 0.5 }, attempt: 1, excluded: [] };
    },
    ReserveQuota: async () => {
      calls.push('ReserveQuota');
      return { count: 1 };
    },
    PlaceOrder: async () => {
      calls.push('PlaceOrder');
      return { retry: false, order_id: 3, server_id: 1, placed_at: Date.now() };
    },
    CheckOrder:
      opts.checkOrder ??
      (async (state: unknown) => {
        calls.push('CheckOrder');
        const taskId = (state as { task_id: string }).task_id;
        checks.set(taskId, (checks.get(taskId) ?? 0) + 1);
        return {
          ready: (checks.get(taskId) ?? 0) >= (opts.readyOn ?? 1),
          timedOut: false,
          order: { order_id: 3, status: 'running', ssh_connection: 'ssh' },
        };
      }),
    CancelOrder: async () => {
      calls.push('CancelOrder');
      return { cancelled: true, order_id: 3 };
    },
    ReportResult: async (state: unknown) => {
      calls.push('ReportResult');
      return { success: !(state as { error?: unknown }).error, delivered: true };
    },
  };
};

describe('Class: LocalStepFunctions', () => {
  let synthesized: WorkflowAsl;

  beforeAll(async () => {
    synthesized = await synthesizeWorkflowAsl();
  });

  it('maps every Task state to its handler file', () => {
    expect(synthesized.functionForState).toEqual(WORKFLOW_TASKS);
  });

  it('runs the happy path through the Wait loop (tasks really run: the polyfill works)', async () => {
    // Prepare
    const calls: string[] = [];
    const sfn = new LocalStepFunctions({
      asl: synthesized.asl,
      handlers: scripted(calls, { readyOn: 3 }),
      waitTimeOverrides: { WaitForReady: 5 },
    });
    // Act
    const { executionArn } = sfn.startExecution('happy', input('happy'));
    const done = await sfn.waitForExecution(executionArn);
    // Assess
    expect(done.status).toBe('SUCCEEDED');
    expect(calls).toEqual([
      'FindServer',
      'ReserveQuota',
      'PlaceOrder',
      'CheckOrder',
      'CheckOrder',
      'CheckOrder',
      'ReportResult',
    ]);
    expect(JSON.parse(done.output ?? '{}')).toMatchObject({ report: { success: true }, check: { ready: true } });
  });

  it('passes a handler error to the Catch in the Lambda shape (Error = name, Cause = JSON with errorMessage)', async () => {
    const calls: string[] = [];
    const failing = async () => {
      const error = new Error('No 4090 available');
      error.name = 'NoServerAvailableError';
      throw error;
    };
    const sfn = new LocalStepFunctions({ asl: synthesized.asl, handlers: { ...scripted(calls), FindServer: failing } });
    const done = await sfn.waitForExecution(sfn.startExecution('nomatch', input('nomatch')).executionArn);
    const output = JSON.parse(done.output ?? '{}') as { error: { Error: string; Cause: string } };
    expect(output.error.Error).toBe('NoServerAvailableError');
    expect(JSON.parse(output.error.Cause)).toMatchObject({
      errorType: 'NoServerAvailableError',
      errorMessage: 'No 4090 available',
    });
    // Every failure goes through CancelOrder (a no-op without an order intent), then the report.
    expect(calls).toEqual(['CancelOrder', 'ReportResult']);
  });

  it('retries transient errors three times, then catches into compensation', async () => {
    const calls: string[] = [];
    const transient = async () => {
      calls.push('CheckOrder');
      const error = new Error('down');
      error.name = 'MarketplaceUnavailableError';
      throw error;
    };
    const sfn = new LocalStepFunctions({
      asl: synthesized.asl,
      handlers: scripted(calls, { checkOrder: transient }),
      retryIntervalOverrides: { CheckOrder: 1 },
    });
    const done = await sfn.waitForExecution(sfn.startExecution('transient', input('transient')).executionArn);
    expect(done.status).toBe('SUCCEEDED');
    expect(calls.filter((c) => c === 'CheckOrder')).toHaveLength(4);
    expect(calls.slice(-2)).toEqual(['CancelOrder', 'ReportResult']);
  });

  it('times out at the hard limit and emits the EventBridge-shaped event', async () => {
    const events: ExecutionStatusChangeEvent[] = [];
    const sfn = new LocalStepFunctions({
      asl: synthesized.asl,
      handlers: scripted([], { readyOn: Number.MAX_SAFE_INTEGER }),
      waitTimeOverrides: { WaitForReady: 20 },
      timeoutSeconds: 1,
      onExecutionEnded: async (event) => {
        events.push(event);
      },
    });
    const done = await sfn.waitForExecution(sfn.startExecution('slow', input('slow')).executionArn);
    expect(done.status).toBe('TIMED_OUT');
    expect(events).toHaveLength(1);
    expect(events[0]).toMatchObject({
      source: 'aws.states',
      'detail-type': 'Step Functions Execution Status Change',
      detail: { status: 'TIMED_OUT', name: 'slow', stateMachineArn: sfn.stateMachineArn },
    });
    expect(JSON.parse(events[0].detail.input)).toMatchObject({ task_id: 'slow' });
  });

  describe('over HTTP (JSON 1.0)', () => {
    let sfn: LocalStepFunctions;
    let server: { endpoint: string; close: () => Promise<void> };
    let client: SFNClient;
    const ended: ExecutionStatusChangeEvent[] = [];

    beforeAll(async () => {
      sfn = new LocalStepFunctions({
        asl: synthesized.asl,
        handlers: scripted([], { readyOn: 2 }),
        waitTimeOverrides: { WaitForReady: 200 },
        onExecutionEnded: async (event) => {
          ended.push(event);
        },
      });
      server = await sfn.listen(0);
      client = new SFNClient({
        endpoint: server.endpoint,
        region: 'us-east-1',
        credentials: { accessKeyId: 'x', secretAccessKey: 'x' },
      });
    });
    afterAll(async () => {
      client.destroy();
      await sfn.close();
      await server.close();
    });

    it('starts an execution through SfnWorkflowStarter and describes it', async () => {
      // Act
      await new SfnWorkflowStarter(client, sfn.stateMachineArn).start('via-sdk', input('via-sdk'));
      const arn = `${sfn.stateMachineArn.replace(':stateMachine:', ':execution:')}:via-sdk`;
      const running = await client.send(new DescribeExecutionCommand({ executionArn: arn }));
      await sfn.waitForExecution(arn);
      const finished = await client.send(new DescribeExecutionCommand({ executionArn: arn }));
      // Assess
      expect(running.status).toBe('RUNNING');
      expect(running.startDate).toBeInstanceOf(Date);
      expect(finished).toMatchObject({ status: 'SUCCEEDED', name: 'via-sdk' });
      expect(JSON.parse(finished.input ?? '{}')).toMatchObject({ task_id: 'via-sdk' });
    });

    it('answers ExecutionAlreadyExists for a reused name with other input', async () => {
      await client.send(
        new StartExecutionCommand({
          stateMachineArn: sfn.stateMachineArn,
          name: 'dup',
          input: JSON.stringify(input('dup')),
        }),
      );
      const again = client.send(
        new StartExecutionCommand({ stateMachineArn: sfn.stateMachineArn, name: 'dup', input: '{"other":true}' }),
      );
      await expect(again).rejects.toMatchObject({ name: 'ExecutionAlreadyExists' });
    });

    it('aborts on StopExecution and reports ABORTED to the ended handler', async () => {
      const { executionArn } = await client.send(
        new StartExecutionCommand({
          stateMachineArn: sfn.stateMachineArn,
          name: 'stop-me',
          input: JSON.stringify(input('stop-me')),
        }),
      );
      await client.send(new StopExecutionCommand({ executionArn }));
      const done = await sfn.waitForExecution(executionArn ?? '');
      expect(done.status).toBe('ABORTED');
      expect(ended.map((e) => e.detail.name)).toContain('stop-me');
    });

    it('answers ExecutionDoesNotExist for an unknown execution', async () => {
      await expect(
        client.send(
          new DescribeExecutionCommand({
            executionArn: 'arn:aws:states:us-east-1:000000000000:execution:OrderWorkflow:nope',
          }),
        ),
      ).rejects.toMatchObject({ name: 'ExecutionDoesNotExist' });
    });
  });
});
