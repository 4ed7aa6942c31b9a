import { caughtErrorText, parseWorkflowState } from '../../../../lambdas/handlers/workflow/shared';

describe('Function: caughtErrorText', () => {
  it('reads the Lambda errorMessage from a caught Cause, or the plain Cause', () => {
    expect(
      caughtErrorText({
        Error: 'NoServerAvailableError',
        Cause: JSON.stringify({ errorType: 'X', errorMessage: 'No H100 available' }),
      }),
    ).toBe('No H100 available');
    expect(caughtErrorText({ Error: 'States.Timeout', Cause: 'task timed out' })).toBe('task timed out');
    expect(caughtErrorText({ Error: 'States.Timeout' })).toBe('States.Timeout');
    expect(caughtErrorText({ Error: 'E', Cause: 'null' })).toBe('null');
  });
});

describe('Function: parseWorkflowState', () => {
  it('reads a caught Step Functions error into its name and text', () => {
    // Prepare
    const state = {
      task_id: 't-1',
      request: {
        gpu_type: 'A100',
        image: 'img',
        currency: 'NATIVE-Blockchain',
        ports: { '22': 'tcp' },
        use_spot: false,
      },
      origin: { source: 'webhook' },
      timing: { poll_interval_seconds: 5, ready_timeout_seconds: 120, soft_deadline: 1 },
      error: {
        Error: 'NoServerAvailableError',
        Cause: JSON.stringify({ errorType: 'NoServerAvailableError', errorMessage: 'No H100 available' }),
      },
    };
    // Act
    const parsed = parseWorkflowState(state);
    // Assess
    expect(parsed.error).toEqual({ name: 'NoServerAvailableError', message: 'No H100 available' });
  });
});
