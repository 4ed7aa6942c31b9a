/**
 * The create-order workflow (issue 4): a Standard state machine (JSONPath) over one Lambda per step,
 * plus the EventBridge safety net for executions that end outside the workflow's own Catch.
 *
 *   FindServer ▸ ReserveQuota ▸ PlaceOrder ─(rented/offline)─▶ FindServer (≤ 3 attempts)
 *                                   └▶ CheckOrder ◀─ WaitForReady ◀─(not ready)─┐
 *                                        ├─(ready)──────────────────────────────┼─▶ ReportResult ▸ ResultReported
 *                                        └─(timed out)─▶ CancelOrder ───────────┘
 *   Catch (any step) ▸ CancelOrder (compensation: cancels a placed order) ▸ ReportResult (failure)
 */
import { Duration } from 'aws-cdk-lib';
import type * as dynamodb from 'aws-cdk-lib/aws-dynamodb';
import * as events from 'aws-cdk-lib/aws-events';
import * as targets from 'aws-cdk-lib/aws-events-targets';
import type * as lambda from 'aws-cdk-lib/aws-lambda';
import * as logs from 'aws-cdk-lib/aws-logs';
import * as sfn from 'aws-cdk-lib/aws-stepfunctions';
import * as tasks from 'aws-cdk-lib/aws-stepfunctions-tasks';
import { Construct } from 'constructs';
import { TRANSIENT_ERROR_NAMES } from '../../lambdas/domain/errors';
import { HARD_TIME_LIMIT_SECONDS } from '../config';
import { EXECUTION_ENDED_ENTRY, WORKFLOW_TASKS, type WorkflowTaskName } from '../routes';
import { RelayFunction } from './relay-function';
import type { RelaySecrets } from './relay-secrets';

export interface OrderWorkflowProps {
  /** The relay table (tasks, quota, claims, pacing, caches). */
  readonly table: dynamodb.ITable;
  readonly secrets: RelaySecrets;
  /** Environment of every workflow function (configEnvironment(config) and the like); TABLE_NAME is added. */
  readonly environment: Readonly<Record<string, string>>;
  /** @default logs.RetentionDays.ONE_MONTH */
  readonly logRetention?: logs.RetentionDays;
}

/** Lambda's own transient failures, retried like ours. */
export const LAMBDA_TRANSIENT_ERRORS = [
  'Lambda.ServiceException',
  'Lambda.AWSLambdaException',
  'Lambda.SdkClientException',
  'Lambda.TooManyRequestsException',
] as const;

/** Every error a workflow step retries (2, 4, 8 s). */
export const WORKFLOW_RETRY_ERRORS: readonly string[] = [...TRANSIENT_ERROR_NAMES, ...LAMBDA_TRANSIENT_ERRORS];

/** Retry policy of every step: 3 retries after 2, 4 and 8 s (order-relay.md §3). */
export const WORKFLOW_RETRY = { interval: Duration.seconds(2), maxAttempts: 3, backoffRate: 2 } as const;

/** Which secrets each function reads (least privilege). */
const SECRETS_OF: Record<WorkflowTaskName | 'ExecutionEnded', readonly ('webhook' | 'apiKey' | 'chat')[]> = {
  FindServer: ['apiKey'],
  ReserveQuota: [],
  PlaceOrder: ['apiKey'],
  CheckOrder: ['apiKey'],
  CancelOrder: ['apiKey'],
  // Callbacks are signed with the webhook secret; chat URLs are secret.
  ReportResult: ['webhook', 'chat'],
  ExecutionEnded: ['apiKey', 'webhook', 'chat'],
};

/** Handler file of each workflow function: the local runtime and asl.ts map Task states through it. */
export const WORKFLOW_FUNCTION_ENTRIES: Record<WorkflowTaskName | 'ExecutionEnded', string> = {
  ...WORKFLOW_TASKS,
  ExecutionEnded: EXECUTION_ENDED_ENTRY,
};

/** Step Functions Standard state machine of the create-order task, its task functions and the safety-net rule. */
export class OrderWorkflow extends Construct {
  public readonly stateMachine: sfn.StateMachine;
  public readonly functions: Record<WorkflowTaskName | 'ExecutionEnded', lambda.IFunction>;
  /** The first state of the definition (tests walk the chain from here). */
  public readonly definition: sfn.IChainable;
  public readonly logGroup: logs.LogGroup;
  /** EventBridge rule: TIMED_OUT / FAILED / ABORTED executions → ExecutionEnded. */
  public readonly executionEndedRule: events.Rule;

  public constructor(scope: Construct, id: string, props: OrderWorkflowProps) {
    super(scope, id);
    const retention = props.logRetention ?? logs.RetentionDays.ONE_MONTH;
    const secretEnv = props.secrets.environment();
    const secretVars = { webhook: 'WEBHOOK_SECRET_ARN', apiKey: 'MARKETPLACE_API_KEY_ARN', chat: 'CHAT_WEBHOOKS_SECRET_ARN' } as const;

    const fns = {} as Record<WorkflowTaskName | 'ExecutionEnded', lambda.IFunction>;
    for (const [name, entry] of Object.entries(WORKFLOW_FUNCTION_ENTRIES) as [WorkflowTaskName | 'ExecutionEnded', string][]) {
      const which = SECRETS_OF[name];
      const fn = new RelayFunction(this, `${name}Function`, {
        entry,
        description: name === 'ExecutionEnded' ? 'GPU relay: create-order safety net (ended executions)' : `GPU relay: create-order step ${name}`,
        // Room for the shared 1 req/s marketplace pacing, a 10 s marketplace timeout and
        // (ReportResult) a 10 s callback plus 5 s chat posts.
        timeout: Duration.seconds(30),
        logRetention: retention,
        environment: {
          ...Object.fromEntries(Object.entries(props.environment).filter(([k]) => !k.endsWith('_SECRET_ARN') && k !== 'MARKETPLACE_API_KEY_ARN')),
          ...Object.fromEntries(which.map((w) => [secretVars[w], secretEnv[secretVars[w]]])),
          TABLE_NAME: props.table.tableName,
        },
      }).fn;
      props.table.grantReadWriteData(fn);
      props.secrets.grantRead(fn, which);
      fns[name] = fn;
    }
    this.functions = fns;

    const step = (name: WorkflowTaskName, resultPath: string, extraRetryErrors: readonly string[] = []) =>
      new tasks.LambdaInvoke(this, name, {
        lambdaFunction: fns[name],
        payloadResponseOnly: true,
        // Our own Retry below covers Lambda's transient errors with the spec's 2/4/8 s policy.
        retryOnServiceExceptions: false,
        resultPath,
      }).addRetry({ errors: [...WORKFLOW_RETRY_ERRORS, ...extraRetryErrors], ...WORKFLOW_RETRY });

    const reportResult = step('ReportResult', '$.report').next(new sfn.Succeed(this, 'ResultReported'));
    const cancelOrder = step('CancelOrder', '$.cancel')
      // A failed cancel must not hide the task's outcome: report anyway (the error is kept aside).
      .addCatch(reportResult, { errors: [sfn.Errors.ALL], resultPath: '$.cancelError' })
      .next(reportResult);
    const catchInto = <T extends sfn.TaskStateBase>(task: T, handler: sfn.IChainable): T => {
      task.addCatch(handler, { errors: [sfn.Errors.ALL], resultPath: '$.error' });
      return task;
    };

    const findServer = catchInto(step('FindServer', '$.search'), reportResult);
    const reserveQuota = catchInto(step('ReserveQuota', '$.quota'), reportResult);
    // OrderOutcomeUnknownError is retried too: a retried PlaceOrder reconciles before it places.
    const placeOrder = catchInto(step('PlaceOrder', '$.placement', ['OrderOutcomeUnknownError']), cancelOrder);
    const checkOrder = catchInto(step('CheckOrder', '$.check'), cancelOrder);
    const waitForReady = new sfn.Wait(this, 'WaitForReady', {
      // From the input, so ORDER_POLL_INTERVAL_SECONDS (set by the ingress) controls the poll period.
      time: sfn.WaitTime.secondsPath('$.timing.poll_interval_seconds'),
    });

    const readiness = new sfn.Choice(this, 'OrderReady')
      .when(sfn.Condition.booleanEquals('$.check.ready', true), reportResult)
      .when(sfn.Condition.booleanEquals('$.check.timedOut', true), cancelOrder)
      .otherwise(waitForReady.next(checkOrder));
    const placement = new sfn.Choice(this, 'PlacementOutcome')
      .when(sfn.Condition.booleanEquals('$.placement.retry', true), findServer)
      .otherwise(checkOrder.next(readiness));

    this.definition = findServer.next(reserveQuota).next(placeOrder).next(placement);

    this.logGroup = new logs.LogGroup(this, 'Logs', { retention });
    this.stateMachine = new sfn.StateMachine(this, 'StateMachine', {
      stateMachineType: sfn.StateMachineType.STANDARD,
      queryLanguage: sfn.QueryLanguage.JSON_PATH,
      definitionBody: sfn.DefinitionBody.fromChainable(this.definition),
      timeout: Duration.seconds(HARD_TIME_LIMIT_SECONDS),
      tracingEnabled: true,
      // State transitions without payloads: inputs carry callback URLs we keep out of logs.
      logs: { destination: this.logGroup, level: sfn.LogLevel.ALL, includeExecutionData: false },
    });

    this.executionEndedRule = new events.Rule(this, 'ExecutionEndedRule', {
      description: 'GPU relay: create-order executions that ended TIMED_OUT, FAILED or ABORTED',
      eventPattern: {
        source: ['aws.states'],
        detailType: ['Step Functions Execution Status Change'],
        detail: { status: ['TIMED_OUT', 'FAILED', 'ABORTED'], stateMachineArn: [this.stateMachine.stateMachineArn] },
      },
      targets: [new targets.LambdaFunction(fns.ExecutionEnded, { retryAttempts: 4, maxEventAge: Duration.hours(2) })],
    });
  }
}
