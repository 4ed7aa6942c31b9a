/**
 * The job worker Lambda (cancel-order, status, price-alert, extend-order, set-spot-price): the consumer a JobQueue is given. It reads
 * the task table, starts create-order executions (a matched price alert) and three secrets.
 */
import { Duration } from 'aws-cdk-lib';
import type * as dynamodb from 'aws-cdk-lib/aws-dynamodb';
import type * as lambda from 'aws-cdk-lib/aws-lambda';
import type * as logs from 'aws-cdk-lib/aws-logs';
import type * as sfn from 'aws-cdk-lib/aws-stepfunctions';
import type { Construct } from 'constructs';
import { WORKER_TIMEOUT_SECONDS } from '../../contract/resources';
import { JOB_WORKER_ENTRY } from '../../contract/routes';
import { RelayFunction } from './relay-function';
import type { RelaySecrets, SecretName } from './relay-secrets';
import { grantTableAccess } from './table-access';

export interface JobWorkerProps {
  readonly table: dynamodb.ITable;
  readonly secrets: RelaySecrets;
  /** Base environment of relay functions (config values, TABLE_NAME); secret ARNs come with `secrets.bindTo`. */
  readonly environment: Readonly<Record<string, string>>;
  /** The create-order workflow a matched price alert starts. */
  readonly stateMachine: sfn.IStateMachine;
  /** @default logs.RetentionDays.ONE_MONTH */
  readonly logRetention?: logs.RetentionDays;
}

/** Secrets the worker reads: the marketplace key, the callback signing key and the chat URLs. */
export const WORKER_SECRETS: readonly SecretName[] = ['apiKey', 'callback', 'chat'];

/** The worker function, with its environment and grants; the JobQueue it is given adds the queue's. */
export const jobWorkerFunction = (scope: Construct, id: string, props: JobWorkerProps): lambda.Function => {
  const fn = new RelayFunction(scope, id, {
    entry: JOB_WORKER_ENTRY,
    description: 'GPU relay: job worker (cancel-order, status, price-alert, extend-order, set-spot-price)',
    // The hard limit (600 s); the soft limit (300 s) is the job's own deadline.
    timeout: Duration.seconds(WORKER_TIMEOUT_SECONDS),
    logRetention: props.logRetention,
    environment: {
      ...props.environment,
      TABLE_NAME: props.table.tableName,
      STATE_MACHINE_ARN: props.stateMachine.stateMachineArn,
    },
  }).fn;
  // Its item families only (lib/constructs/table-access.ts); status reads the leases of the listed
  // orders by key with BatchGetItem, which the read actions include.
  grantTableAccess(props.table, fn, 'JobWorker');
  props.stateMachine.grantStartExecution(fn);
  props.secrets.bindTo(fn, WORKER_SECRETS);
  return fn;
};
