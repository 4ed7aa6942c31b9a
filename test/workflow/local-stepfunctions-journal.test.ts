/**
 * The local Step Functions on a kept state (issue 39): an execution a stop or crash left running is
 * run again from its start under its name; one already past its deadline ends TIMED_OUT through the
 * ExecutionEnded path; ended ones stay ended and their names stay taken.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import * as path from 'node:path';
import { synthesizeWorkflowAsl, type WorkflowAsl } from '../../local/asl';
import { LocalStepFunctions, type ExecutionStatusChangeEvent } from '../../local/stepfunctions';

const input = (taskId: string) => ({
  task_id: taskId,
  request: { gpu_type: '4090', image: 'img', currency: 'NATIVE-Blockchain', ports: { '22': 'tcp' }, use_spot: true },
  origin: { source: 'webhook' },
  timing: { poll_interval_seconds: 1, ready_timeout_seconds: 120, soft_deadline: Math.floor(Date.now() / 1000) + 300 },
});

/** Handlers whose CheckOrder never says ready until `ready.value` is set: an execution stays RUNNING. */
const handlers = (calls: string[], ready: { value: boolean }) => ({
  FindServer: async () => (
    calls.push('FindServer'),
    { server: { id: 1, gpu_array: ['g'], price_usd: 0.5 }, attempt: 1, excluded: [] }
  ),
  ReserveQuota: async () => (calls.push('ReserveQuota'), { count: 1 }),
  PlaceOrder: async () => (
    calls.push('PlaceOrder'),
    { retry: false, order_id: 3, server_id: 1, placed_at: Date.now() }
  ),
  CheckOrder: async () => (
    calls.push('CheckOrder'),
    { ready: ready.value, timedOut: false, order: { order_id: 3, status: 'running', ssh_connection: 'ssh' } }
  ),
  CancelOrder: async () => (calls.push('CancelOrder'), { cancelled: true, order_id: 3 }),
  ReportResult: async () => (calls.push('ReportResult'), { success: true, delivered: true }),
});

describe('Class: LocalStepFunctions with a journal', () => {
  let synthesized: WorkflowAsl;
  let dir: string;
  beforeAll(async () => {
    synthesized = await synthesizeWorkflowAsl();
  });
  beforeEach(() => {
    dir = mkdtempSync(path.join(tmpdir(), 'sfn-journal-'));
  });
  afterEach(() => rmSync(dir, { recursive: true, force: true }));

  it('runs an execution left running again from its start, and keeps an ended one ended', async () => {
    // Prepare: one execution ends, one is left running when the first "process" stops
    const journalFile = path.join(dir, 'executions.jsonl');
    const first: string[] = [];
    const ready = { value: false };
    const before = new LocalStepFunctions({
      asl: synthesized.asl,
      handlers: handlers(first, ready),
      waitTimeOverrides: { WaitForReady: 5 },
      journalFile,
    });
    ready.value = true;
    await before.waitForExecution(before.startExecution('done', input('done')).executionArn);
    ready.value = false;
    before.startExecution('left', input('left'));
    await new Promise((resolve) => setTimeout(resolve, 100));
    await before.close();

    // Act: the next start carries on
    const second: string[] = [];
    const ended: ExecutionStatusChangeEvent[] = [];
    const after = new LocalStepFunctions({
      asl: synthesized.asl,
      handlers: handlers(second, { value: true }),
      waitTimeOverrides: { WaitForReady: 5 },
      journalFile,
      onExecutionEnded: async (event) => void ended.push(event),
    });
    const outcome = after.resume();
    const left = await after.waitForExecution(
      outcome.resumed.map((name) => after.describeExecution(arnOf(after, name)))[0]!.executionArn,
    );

    // Assert
    expect(outcome).toEqual({ resumed: ['left'], timedOut: [] });
    expect(left.status).toBe('SUCCEEDED');
    expect(second).toEqual(['FindServer', 'ReserveQuota', 'PlaceOrder', 'CheckOrder', 'ReportResult']);
    expect(() => after.startExecution('done', input('done'))).toThrow(/Execution Already Exists/);
    expect(ended).toEqual([]);
    // A third start finds nothing left to carry on
    const third = new LocalStepFunctions({ asl: synthesized.asl, handlers: handlers([], ready), journalFile });
    expect(third.resume()).toEqual({ resumed: [], timedOut: [] });
  });

  it('ends TIMED_OUT through the ExecutionEnded path an execution past its deadline while stopped', async () => {
    // Prepare
    const journalFile = path.join(dir, 'executions.jsonl');
    const before = new LocalStepFunctions({
      asl: synthesized.asl,
      handlers: handlers([], { value: false }),
      waitTimeOverrides: { WaitForReady: 5 },
      journalFile,
    });
    before.startExecution('late', input('late'));
    await new Promise((resolve) => setTimeout(resolve, 50));
    await before.close();
    const ended: ExecutionStatusChangeEvent[] = [];
    const calls: string[] = [];
    const after = new LocalStepFunctions({
      asl: synthesized.asl,
      handlers: handlers(calls, { value: true }),
      journalFile,
      onExecutionEnded: async (event) => void ended.push(event),
    });

    // Act: started again after the definition's TimeoutSeconds
    const outcome = after.resume(new Date(Date.now() + 3_600_000));
    await after.waitForExecution(arnOf(after, 'late'));

    // Assert
    expect(outcome).toEqual({ resumed: [], timedOut: ['late'] });
    expect(calls).toEqual([]);
    expect(ended).toHaveLength(1);
    expect(ended[0]!.detail).toMatchObject({
      name: 'late',
      status: 'TIMED_OUT',
      error: 'States.Timeout',
      cause: 'the relay was stopped past the deadline while the task was in state CheckOrder',
    });
    expect(JSON.parse(ended[0]!.detail.input)).toMatchObject({ task_id: 'late' });
  });
});

const arnOf = (sfn: LocalStepFunctions, name: string): string =>
  `arn:aws:states:us-east-1:000000000000:execution:${sfn.stateMachineArn.split(':').pop()}:${name}`;
