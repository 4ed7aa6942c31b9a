/** The OrderWorkflow construct: retries, catches, timeouts, logging, the safety-net rule and IAM. */
import { Match, Template } from 'aws-cdk-lib/assertions';
import { buildWorkflowStack, synthesizeWorkflowAsl } from '../../local/asl';
import { BUSINESS_ERROR_NAMES, TRANSIENT_ERROR_NAMES } from '../../lambdas/domain/errors';
import { WORKFLOW_TASKS } from '../../contract/routes';

interface AslTask {
  Type: string;
  Retry?: {
    ErrorEquals: string[];
    IntervalSeconds?: number;
    MaxAttempts: number;
    BackoffRate?: number;
    JitterStrategy?: string;
    MaxDelaySeconds?: number;
  }[];
  Catch?: { ErrorEquals: string[]; ResultPath: string; Next: string }[];
  Next?: string;
}

describe('Construct: OrderWorkflow', () => {
  const { stack, workflow } = buildWorkflowStack({ MARKETPLACE_URL: 'https://m.example' });
  const template = Template.fromStack(stack);
  let states: Record<string, AslTask>;
  let asl: Record<string, unknown>;

  beforeAll(async () => {
    ({ asl } = await synthesizeWorkflowAsl());
    states = asl.States as Record<string, AslTask>;
  });

  it('is a Standard JSONPath state machine with a 600 s timeout, tracing and logging', () => {
    expect(asl).toMatchObject({ TimeoutSeconds: 600, QueryLanguage: 'JSONPath', StartAt: 'FindServer' });
    template.hasResourceProperties('AWS::StepFunctions::StateMachine', {
      StateMachineType: 'STANDARD',
      TracingConfiguration: { Enabled: true },
      LoggingConfiguration: Match.objectLike({ Level: 'ALL', IncludeExecutionData: false }),
    });
    template.hasResourceProperties('AWS::Logs::LogGroup', { RetentionInDays: 30 });
  });

  it('never retries a business outcome, retries every other exception 3 times after 2, 4 and 8 s', () => {
    for (const name of Object.keys(WORKFLOW_TASKS)) {
      const retry = states[name].Retry ?? [];
      // Retriers match in order: the business list first (MaxAttempts 0), States.ALL alone and last.
      expect(retry[0]).toMatchObject({
        ErrorEquals: [...BUSINESS_ERROR_NAMES, 'InvalidWorkflowInputError'],
        MaxAttempts: 0,
      });
      expect(retry[retry.length - 1]).toEqual({
        ErrorEquals: ['States.ALL'],
        IntervalSeconds: 2,
        MaxAttempts: 3,
        BackoffRate: 2,
      });
      const named = retry.find((r) => r.ErrorEquals.includes('MarketplaceUnavailableError'));
      expect(named).toMatchObject({ IntervalSeconds: 2, MaxAttempts: 3, BackoffRate: 2 });
      expect(named?.ErrorEquals).toEqual(
        expect.arrayContaining([
          ...TRANSIENT_ERROR_NAMES,
          'Lambda.ServiceException',
          'Lambda.ClientExecutionTimeoutException',
        ]),
      );
      // No business name may hide in a retrying retrier.
      for (const r of retry.slice(1))
        for (const business of BUSINESS_ERROR_NAMES) expect(r.ErrorEquals).not.toContain(business);
    }
  });

  it('gives Lambda throttling more, jittered attempts than an exception', () => {
    for (const name of Object.keys(WORKFLOW_TASKS)) {
      const throttle = (states[name].Retry ?? []).find((r) =>
        r.ErrorEquals.includes('Lambda.TooManyRequestsException'),
      );
      expect(throttle).toMatchObject({
        ErrorEquals: ['Lambda.TooManyRequestsException'],
        MaxAttempts: 6,
        JitterStrategy: 'FULL',
        MaxDelaySeconds: 30,
      });
    }
  });

  it('retries OrderOutcomeUnknownError in PlaceOrder (a retry reconciles through my_orders before placing)', () => {
    const retry = states.PlaceOrder.Retry ?? [];
    expect(retry.some((r) => r.ErrorEquals.includes('OrderOutcomeUnknownError') && r.MaxAttempts === 3)).toBe(true);
  });

  it('catches every error into compensation and the failure report', () => {
    // FindServer and ReserveQuota run again after a placement retry, when a late order may exist.
    expect(states.FindServer.Catch).toEqual([
      { ErrorEquals: ['States.ALL'], ResultPath: '$.error', Next: 'CancelOrder' },
    ]);
    expect(states.ReserveQuota.Catch?.[0].Next).toBe('CancelOrder');
    expect(states.PlaceOrder.Catch).toEqual([
      { ErrorEquals: ['States.ALL'], ResultPath: '$.error', Next: 'CancelOrder' },
    ]);
    expect(states.CheckOrder.Catch?.[0]).toMatchObject({ ResultPath: '$.error', Next: 'CancelOrder' });
    expect(states.CancelOrder).toMatchObject({
      Next: 'ReportResult',
      Catch: [{ ErrorEquals: ['States.ALL'], ResultPath: '$.cancelError', Next: 'ReportResult' }],
    });
  });

  it('waits for the poll interval taken from the input', () => {
    expect(asl.States).toMatchObject({
      WaitForReady: { Type: 'Wait', SecondsPath: '$.timing.poll_interval_seconds', Next: 'CheckOrder' },
    });
  });

  it('routes TIMED_OUT, FAILED and ABORTED executions to the ExecutionEnded function', () => {
    template.hasResourceProperties('AWS::Events::Rule', {
      EventPattern: {
        source: ['aws.states'],
        'detail-type': ['Step Functions Execution Status Change'],
        detail: {
          status: ['TIMED_OUT', 'FAILED', 'ABORTED'],
          stateMachineArn: [{ Ref: stack.getLogicalId(workflow.stateMachine.node.defaultChild as never) }],
        },
      },
      Targets: [
        Match.objectLike({
          Arn: {
            'Fn::GetAtt': [stack.getLogicalId(workflow.functions.ExecutionEnded.node.defaultChild as never), 'Arn'],
          },
        }),
      ],
    });
  });

  it('gives each function only the secrets it needs', () => {
    const secretRefs = (fnName: keyof typeof workflow.functions): string[] => {
      const roleId = stack.getLogicalId(workflow.functions[fnName].role?.node.defaultChild as never);
      const policies = template.findResources('AWS::IAM::Policy', { Properties: { Roles: [{ Ref: roleId }] } });
      const text = JSON.stringify(policies);
      return [
        'WebhookSecret',
        'MarketplaceApiKey',
        'ChatWebhooks',
        'SlackSigningSecret',
        'CallbackSigningSecret',
      ].filter((s) => new RegExp(`Secrets${s}[0-9A-F]{8}`).test(text));
    };
    expect(secretRefs('FindServer')).toEqual(['MarketplaceApiKey']);
    expect(secretRefs('ReserveQuota')).toEqual([]);
    // Deliveries are signed with the callback signing secret; the webhook secret signs requests only.
    expect(secretRefs('ReportResult')).toEqual(['ChatWebhooks', 'CallbackSigningSecret']);
    expect(secretRefs('ExecutionEnded')).toEqual(['MarketplaceApiKey', 'ChatWebhooks', 'CallbackSigningSecret']);
  });

  it('passes the table name and only the needed secret ARNs in the environment', () => {
    const fnId = stack.getLogicalId(workflow.functions.ReserveQuota.node.defaultChild as never);
    const env = template.toJSON().Resources[fnId].Properties.Environment.Variables as Record<string, unknown>;
    expect(env).toMatchObject({ MARKETPLACE_URL: 'https://m.example', TABLE_NAME: expect.anything() });
    expect(env).not.toHaveProperty('WEBHOOK_SECRET_ARN');
    expect(env).not.toHaveProperty('MARKETPLACE_API_KEY_ARN');
    // Secrets are bound per function (RelaySecrets.bindTo): PlaceOrder gets the marketplace key only.
    const placeId = stack.getLogicalId(workflow.functions.PlaceOrder.node.defaultChild as never);
    const placeEnv = template.toJSON().Resources[placeId].Properties.Environment.Variables as Record<string, unknown>;
    expect(placeEnv).toHaveProperty('MARKETPLACE_API_KEY_ARN');
    expect(placeEnv).not.toHaveProperty('WEBHOOK_SECRET_ARN');
  });
});
