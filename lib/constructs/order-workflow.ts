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
import { RETRY_POLICY } from '../../contract/retry-policy';
import { Duration, Names, RemovalPolicy } from 'aws-cdk-lib';
import type * as dynamodb from 'aws-cdk-lib/aws-dynamodb';
import * as events from 'aws-cdk-lib/aws-events';
import * as targets from 'aws-cdk-lib/aws-events-targets';
import * as lambda from 'aws-cdk-lib/aws-lambda';
import * as destinations from 'aws-cdk-lib/aws-lambda-destinations';
import * as logs from 'aws-cdk-lib/aws-logs';
import * as sqs from 'aws-cdk-lib/aws-sqs';
import * as sfn from 'aws-cdk-lib/aws-stepfunctions';
import * as tasks from 'aws-cdk-lib/aws-stepfunctions-tasks';
import { Construct } from 'constructs';
import { BUSINESS_ERROR_NAMES, TRANSIENT_ERROR_NAMES } from '../../contract/error-names';
import { HARD_TIME_LIMIT_SECONDS } from '../../contract/limits';
import { EXECUTION_ENDED_ENTRY, WORKFLOW_TASKS, type WorkflowTaskName } from '../../contract/routes';
import { RelayFunction } from './relay-function';
import type { RelaySecrets, SecretName } from './relay-secrets';
import { grantTableAccess } from './table-access';

export interface OrderWorkflowProps {
  /** The relay table (tasks, quota, claims, pacing, caches). */
  readonly table: dynamodb.ITable;
  readonly secrets: RelaySecrets;
  /** Environment of every workflow function (configEnvironment(config) and the like); TABLE_NAME is added. */
  readonly environment: Readonly<Record<string, string>>;
  /** @default logs.RetentionDays.ONE_MONTH */
  readonly logRetention?: logs.RetentionDays;
}

/** Lambda's own transient failures (Step Functions "handle Lambda service exceptions"), retried like ours. */
export const LAMBDA_TRANSIENT_ERRORS = [
  'Lambda.ServiceException',
  'Lambda.AWSLambdaException',
  'Lambda.SdkClientException',
  'Lambda.ClientExecutionTimeoutException',
] as const;

/** Lambda throttling: the function never ran, so it gets more (and jittered) attempts than an exception. */
export const LAMBDA_THROTTLE_ERRORS = ['Lambda.TooManyRequestsException'] as const;

/** Named transient errors (ours and Lambda's); every other non-business exception is retried too (States.ALL). */
export const WORKFLOW_RETRY_ERRORS: readonly string[] = [...TRANSIENT_ERROR_NAMES, ...LAMBDA_TRANSIENT_ERRORS];

/**
 * Errors a step never retries: the business outcomes (lambdas/domain/errors.ts, the list the SQS
 * worker uses too) and a malformed state document, which no retry can repair.
 */
export const NOT_RETRIED_ERRORS: readonly string[] = [...BUSINESS_ERROR_NAMES, 'InvalidWorkflowInputError'];

/** Retry policy of every step (contract/retry-policy.ts): 3 retries after 2, 4 and 8 s (order-relay.md §3). */
export const WORKFLOW_RETRY = {
  interval: Duration.seconds(RETRY_POLICY.firstDelaySeconds),
  maxAttempts: RETRY_POLICY.retries,
  backoffRate: RETRY_POLICY.backoffRate,
} as const;

/** Retry policy on Lambda throttling: 6 retries from 2 s, doubling up to 30 s, full jitter (about 1.5 min at most). */
export const THROTTLE_RETRY = {
  interval: Duration.seconds(2),
  maxAttempts: 6,
  backoffRate: 2,
  maxDelay: Duration.seconds(30),
  jitterStrategy: sfn.JitterType.FULL,
} as const;

/**
 * Lambda timeout of each workflow function, in seconds: above the function's worst case without a
 * budget (test/unit/time-budgets.test.ts sums it from the constants the code uses). The clients
 * also budget from the remaining time, so even an unforeseen wait ends in an error the handler reports.
 */
export const WORKFLOW_FUNCTION_TIMEOUT_SECONDS: Record<WorkflowTaskName | 'ExecutionEnded', number> = {
  FindServer: 150,
  ReserveQuota: 30,
  PlaceOrder: 600,
  CheckOrder: 150,
  CancelOrder: 240,
  ReportResult: 90,
  ExecutionEnded: 300,
};

/**
 * Which secrets each function reads (least privilege; test/infra/secret-readers.test.ts pins every
 * function's list). apiKey: the functions that call the marketplace (ReserveQuota and ReportResult never do).
 */
export const SECRETS_OF: Record<WorkflowTaskName | 'ExecutionEnded', readonly Exclude<SecretName, 'slack'>[]> = {
  FindServer: ['apiKey'],
  ReserveQuota: [],
  // callerKeys: the data key that opens a task's sealed access secrets (issue 37 §3): PlaceOrder sends
  // them, CheckOrder logs in with the caller's password, ReportResult puts the Jupyter token in the signed result.
  // sshPassword: the relay's own root password of an order (issue 38 §4), sent by PlaceOrder, used by
  // CheckOrder's readiness login; no other function can derive it.
  PlaceOrder: ['apiKey', 'callerKeys', 'sshPassword'],
  CheckOrder: ['apiKey', 'callerKeys', 'sshPassword'],
  CancelOrder: ['apiKey'],
  // Callbacks are signed with the callback signing secret (never the webhook secret); chat URLs are secret.
  ReportResult: ['callback', 'chat', 'callerKeys'],
  ExecutionEnded: ['apiKey', 'callback', 'chat'],
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
  /** Status-change events the safety net could not handle: the rule target's DLQ and the function's on-failure destination. */
  public readonly safetyNetDeadLetterQueue: sqs.Queue;

  public constructor(scope: Construct, id: string, props: OrderWorkflowProps) {
    super(scope, id);
    const retention = props.logRetention ?? logs.RetentionDays.ONE_MONTH;

    const fns = {} as Record<WorkflowTaskName | 'ExecutionEnded', lambda.IFunction>;
    for (const [name, entry] of Object.entries(WORKFLOW_FUNCTION_ENTRIES) as [
      WorkflowTaskName | 'ExecutionEnded',
      string,
    ][]) {
      const fn = new RelayFunction(this, `${name}Function`, {
        entry,
        description:
          name === 'ExecutionEnded'
            ? 'GPU relay: create-order safety net (ended executions)'
            : `GPU relay: create-order step ${name}`,
        timeout: Duration.seconds(WORKFLOW_FUNCTION_TIMEOUT_SECONDS[name]),
        logRetention: retention,
        environment: {
          ...props.environment,
          TABLE_NAME: props.table.tableName,
        },
      }).fn;
      grantTableAccess(props.table, fn, `Workflow${name}`);
      props.secrets.bindTo(fn, SECRETS_OF[name]);
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
      })
        // Retriers match in order, each counting its own attempts: business outcomes never retry
        // (MaxAttempts 0), throttling gets the long policy, any other exception the spec's 3 retries.
        .addRetry({ errors: [...NOT_RETRIED_ERRORS], maxAttempts: 0 })
        .addRetry({ errors: [...LAMBDA_THROTTLE_ERRORS], ...THROTTLE_RETRY })
        .addRetry({ errors: [...WORKFLOW_RETRY_ERRORS, ...extraRetryErrors], ...WORKFLOW_RETRY })
        // A bug, an unclassified marketplace answer, a Lambda timeout (Sandbox.Timedout): retried too.
        .addRetry({ errors: [sfn.Errors.ALL], ...WORKFLOW_RETRY });

    const reportResult = step('ReportResult', '$.report').next(new sfn.Succeed(this, 'ResultReported'));
    const cancelOrder = step('CancelOrder', '$.cancel')
      // A failed cancel must not hide the task's outcome: report anyway (the error is kept aside).
      .addCatch(reportResult, { errors: [sfn.Errors.ALL], resultPath: '$.cancelError' })
      .next(reportResult);
    const catchInto = <T extends sfn.TaskStateBase>(task: T, handler: sfn.IChainable): T => {
      task.addCatch(handler, { errors: [sfn.Errors.ALL], resultPath: '$.error' });
      return task;
    };

    // FindServer and ReserveQuota also run again after a placement retry, when an earlier
    // create_order whose outcome was unknown may have landed late: their failures go through
    // CancelOrder too (it finds such an order by the task's intent marker; without one it is a no-op).
    const findServer = catchInto(step('FindServer', '$.search'), cancelOrder);
    const reserveQuota = catchInto(step('ReserveQuota', '$.quota'), cancelOrder);
    // OrderOutcomeUnknownError is retried too: a retried PlaceOrder reconciles through my_orders
    // (intent marker on the task record) before it places, so a retry never orders twice.
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

    // A standing order with no server yet (issue 23) ends its execution here, its task `waiting`: the
    // fleet watch resumes it with a new execution when a server matches, or fails it when its wait ends.
    const waitingForServer = new sfn.Succeed(this, 'WaitingForServer');
    // So does one the hourly cap or a budget refused (it waits again, held until the refusal may clear).
    const reserved = new sfn.Choice(this, 'QuotaReserved')
      .when(sfn.Condition.isPresent('$.quota.waiting'), waitingForServer)
      .otherwise(placeOrder);
    reserveQuota.next(reserved);
    placeOrder.next(placement);
    const searched = new sfn.Choice(this, 'ServerFound')
      .when(sfn.Condition.isPresent('$.search.waiting'), waitingForServer)
      .otherwise(reserveQuota);
    this.definition = findServer.next(searched);

    this.logGroup = new logs.LogGroup(this, 'Logs', {
      // Under /aws/vendedlogs/: Step Functions then needs no entry of its own in the account's one
      // CloudWatch Logs resource policy (5,120 characters at most, shared by every log delivery).
      logGroupName: `/aws/vendedlogs/states/${Names.uniqueResourceName(this, { maxLength: 200 })}`,
      retention,
      // A named group: retained, it would block re-creating the stack under the same name.
      removalPolicy: RemovalPolicy.DESTROY,
    });
    this.stateMachine = new sfn.StateMachine(this, 'StateMachine', {
      stateMachineType: sfn.StateMachineType.STANDARD,
      queryLanguage: sfn.QueryLanguage.JSON_PATH,
      definitionBody: sfn.DefinitionBody.fromChainable(this.definition),
      timeout: Duration.seconds(HARD_TIME_LIMIT_SECONDS),
      tracingEnabled: true,
      // State transitions without payloads: inputs carry callback URLs we keep out of logs.
      logs: { destination: this.logGroup, level: sfn.LogLevel.ALL, includeExecutionData: false },
    });

    // Where a status-change event ends when neither EventBridge nor the function's async invoke could
    // handle it; the monitoring construct alarms on it (RUNBOOK: SafetyNetDeadLetterQueueNotEmpty).
    this.safetyNetDeadLetterQueue = new sqs.Queue(this, 'SafetyNetDeadLetterQueue', {
      retentionPeriod: Duration.days(14),
      encryption: sqs.QueueEncryption.SQS_MANAGED,
      enforceSSL: true,
    });
    // Async invoke (EventBridge → Lambda): 2 retries by Lambda, then the event goes to the queue.
    new lambda.EventInvokeConfig(this, 'ExecutionEndedAsyncInvoke', {
      function: fns.ExecutionEnded,
      retryAttempts: 2,
      maxEventAge: Duration.hours(6),
      onFailure: new destinations.SqsDestination(this.safetyNetDeadLetterQueue),
    });

    this.executionEndedRule = new events.Rule(this, 'ExecutionEndedRule', {
      description: 'GPU relay: create-order executions that ended TIMED_OUT, FAILED or ABORTED',
      eventPattern: {
        source: ['aws.states'],
        detailType: ['Step Functions Execution Status Change'],
        detail: { status: ['TIMED_OUT', 'FAILED', 'ABORTED'], stateMachineArn: [this.stateMachine.stateMachineArn] },
      },
      targets: [
        new targets.LambdaFunction(fns.ExecutionEnded, {
          retryAttempts: 4,
          maxEventAge: Duration.hours(2),
          // Events EventBridge could not deliver (throttling, a missing permission) are kept, not dropped.
          deadLetterQueue: this.safetyNetDeadLetterQueue,
        }),
      ],
    });
  }
}
