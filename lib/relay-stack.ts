/** The relay's one stack: it only composes the constructs and states the cdk-nag acknowledgements. */
import {
  Annotations,
  AspectPriority,
  Aspects,
  CfnOutput,
  Stack,
  Validations,
  type IAspect,
  type StackProps,
} from 'aws-cdk-lib';
import * as apigwv2 from 'aws-cdk-lib/aws-apigatewayv2';
import * as iam from 'aws-cdk-lib/aws-iam';
import type * as lambda from 'aws-cdk-lib/aws-lambda';
import * as logs from 'aws-cdk-lib/aws-logs';
// cdk-nag's own flattening, so acknowledged finding ids match the ones it reports.
import { flattenCfnReference } from 'cdk-nag/lib/utils/flatten-cfn-reference';
import { Construct, type IConstruct } from 'constructs';
import type { RelayConfig } from './config';
import { FleetWatch } from './constructs/fleet-watch';
import { JobQueue } from './constructs/job-queue';
import { jobWorkerFunction } from './constructs/job-worker';
import { Monitoring } from './constructs/monitoring';
import { OrderWorkflow } from './constructs/order-workflow';
import { RelaySecrets } from './constructs/relay-secrets';
import { RelayTable } from './constructs/relay-table';
import { WebhookApi } from './constructs/webhook-api';
import { configEnvironment } from './function-environment';

/** Actions that accept only `Resource: *`: X-Ray and Step Functions' vended log delivery. */
const RESOURCELESS_ACTIONS = new Set([
  'xray:PutTraceSegments',
  'xray:PutTelemetryRecords',
  'xray:GetSamplingRules',
  'xray:GetSamplingTargets',
  'logs:CreateLogDelivery',
  'logs:GetLogDelivery',
  'logs:UpdateLogDelivery',
  'logs:DeleteLogDelivery',
  'logs:ListLogDeliveries',
  'logs:PutResourcePolicy',
  'logs:DescribeResourcePolicies',
  'logs:DescribeLogGroups',
]);

/** Id of the synth warning for a Slack route open to every workspace (Annotations.addWarningV2). */
export const SLACK_TEAMS_UNSET_WARNING_ID = 'gpu-relay:slackAllowedTeamIdsUnset';

export interface RelayStackProps extends StackProps {
  readonly config: RelayConfig;
  /**
   * DynamoDB deletion protection on the relay table.
   * @default true
   */
  readonly tableDeletionProtection?: boolean;
}

/**
 * CloudWatch Logs accepts only these retention periods; anything else fails at deploy, so fail at synth.
 * INFINITE is refused too: every log group has a retention.
 */
export const toRetentionDays = (days: number): logs.RetentionDays => {
  const allowed = Object.values(logs.RetentionDays).filter(
    (value): value is number => typeof value === 'number' && value > 0 && value !== logs.RetentionDays.INFINITE,
  );
  if (!allowed.includes(days)) throw new Error(`logRetentionDays must be one of ${allowed.join(', ')}; got ${days}`);
  return days as logs.RetentionDays;
};

export class RelayStack extends Stack {
  public readonly table: RelayTable;
  public readonly secrets: RelaySecrets;
  public readonly workflow: OrderWorkflow;
  public readonly jobQueue: JobQueue;
  public readonly api: WebhookApi;
  public readonly fleetWatch: FleetWatch;
  public readonly monitoring: Monitoring;

  public constructor(scope: Construct, id: string, props: RelayStackProps) {
    super(scope, id, props);
    const { config } = props;
    const logRetention = toRetentionDays(config.logRetentionDays);

    this.secrets = new RelaySecrets(this, 'Secrets');
    this.table = new RelayTable(this, 'RelayTable', { deletionProtection: props.tableDeletionProtection ?? true });
    const table = this.table.table;
    // Secret ARNs are not in it: each function gets those it may read with `secrets.bindTo`.
    const environment = { ...configEnvironment(config), TABLE_NAME: table.tableName };

    this.workflow = new OrderWorkflow(this, 'OrderWorkflow', {
      table,
      secrets: this.secrets,
      environment,
      logRetention,
    });
    // The worker and its queue share the 'JobQueue' scope ('Default' adds nothing to logical ids), so
    // their resources keep the logical ids of the deployed stack.
    const jobScope = new Construct(this, 'JobQueue');
    const worker = jobWorkerFunction(jobScope, 'Worker', {
      table,
      secrets: this.secrets,
      environment,
      stateMachine: this.workflow.stateMachine,
      logRetention,
    });
    this.jobQueue = new JobQueue(jobScope, 'Default', { consumer: worker });
    this.api = new WebhookApi(this, 'WebhookApi', {
      table,
      secrets: this.secrets,
      environment,
      stateMachine: this.workflow.stateMachine,
      jobQueue: this.jobQueue.queue,
      throttle: config.apiThrottle,
      logRetention,
    });
    // The stack always deploys /slack/command with its signing-secret slot: once the operator sets the
    // secret (or allows unsigned commands), any workspace with the app installed can rent and cancel.
    const slackFunction = this.api.functions.SlackCommand as Construct | undefined;
    if (slackFunction && !config.slackAllowedTeamIds) {
      Annotations.of(slackFunction).addWarningV2(
        SLACK_TEAMS_UNSET_WARNING_ID,
        'slackAllowedTeamIds is not set: /slack/command accepts commands from any Slack workspace whose request passes the signature check' +
          (config.allowUnsignedSlack ? ' (and, with allowUnsignedSlack=true, from anyone at all)' : '') +
          '. Deploy with -c slackAllowedTeamIds=T0123ABC[,…] (and optionally -c slackAllowedUserIds=U0123ABC[,…]); docs/security.md "Slack boundary".',
      );
    }

    this.fleetWatch = new FleetWatch(this, 'FleetWatch', {
      table,
      secrets: this.secrets,
      environment,
      intervalSeconds: config.watchIntervalSeconds,
      logRetention,
      stateMachine: this.workflow.stateMachine,
    });

    const prefixed = (prefix: string, fns: Record<string, lambda.IFunction>) =>
      Object.fromEntries(Object.entries(fns).map(([name, fn]) => [`${prefix}${name}`, fn]));
    this.monitoring = new Monitoring(this, 'Monitoring', {
      alarmEmail: config.alarmEmail,
      deadLetterQueue: this.jobQueue.deadLetterQueue,
      jobQueue: this.jobQueue.queue,
      safetyNetDeadLetterQueue: this.workflow.safetyNetDeadLetterQueue,
      stateMachine: this.workflow.stateMachine,
      httpApi: this.api.httpApi,
      functions: {
        ...prefixed('Api', this.api.lambdaFunctions()),
        ...prefixed('Workflow', this.workflow.functions),
        JobWorker: this.jobQueue.worker,
        FleetWatch: this.fleetWatch.fn,
      },
      fleetWatch: this.fleetWatch.fn,
      ...(config.spendLimitUsdPerDay !== undefined ? { spendLimitUsdPerDay: config.spendLimitUsdPerDay } : {}),
    });

    this.outputs();
    this.acknowledgeNagFindings();
  }

  private outputs(): void {
    new CfnOutput(this, 'ApiUrl', {
      value: this.api.url,
      description: 'Base URL of the relay (POST {ApiUrl}webhook/create-order)',
    });
    const secrets = {
      WebhookSecret: this.secrets.webhookSecret,
      MarketplaceApiKey: this.secrets.marketplaceApiKey,
      ChatWebhooks: this.secrets.chatWebhooks,
      SlackSigningSecret: this.secrets.slackSigningSecret,
      CallbackSigningSecret: this.secrets.callbackSigningSecret,
      SshPasswordSecret: this.secrets.sshPasswordSecret,
    };
    for (const [name, secret] of Object.entries(secrets)) {
      new CfnOutput(this, `${name}Arn`, { value: secret.secretArn });
      new CfnOutput(this, `${name}Name`, { value: secret.secretName });
    }
    new CfnOutput(this, 'DashboardUrl', { value: this.monitoring.dashboardUrl });
    new CfnOutput(this, 'AlarmTopicArn', { value: this.monitoring.alarmTopic.topicArn });
    new CfnOutput(this, 'TableName', { value: this.table.table.tableName });
    new CfnOutput(this, 'StateMachineArn', { value: this.workflow.stateMachine.stateMachineArn });
    new CfnOutput(this, 'JobQueueUrl', { value: this.jobQueue.queue.queueUrl });
  }

  /**
   * cdk-nag AwsSolutions findings we accept, each with its reason. Kept as narrow as cdk-nag v3 allows:
   * per finding id, and on the construct that raises it unless the finding is the same everywhere.
   */
  private acknowledgeNagFindings(): void {
    const ack = (scope: Construct, id: string, reason: string) => Validations.of(scope).acknowledge({ id, reason });

    ack(
      this,
      'AwsSolutions-IAM4[Policy::arn:<AWS::Partition>:iam::aws:policy/service-role/AWSLambdaBasicExecutionRole]',
      'The AWS-managed basic execution role only lets a function write its own CloudWatch logs; a hand-written copy would be identical.',
    );

    const routes = this.api.httpApi.node.findAll().filter((node) => node instanceof apigwv2.CfnRoute);
    for (const route of routes) {
      ack(
        route,
        'AwsSolutions-APIG4',
        "Authorization is the spec's: signed routes verify X-Webhook-Signature (HMAC-SHA256, constant-time) in the Lambda; /health, /openapi.json and /webhook/marketplace are public by design; /slack/command is checked with the Slack signing secret when one is set.",
      );
    }

    ack(
      this.secrets.webhookSecret,
      'AwsSolutions-SMG4',
      'Rotated by the operator (docs/deploy.md "Set the secrets"): every client must learn the new key, and the AWSPREVIOUS version stays accepted meanwhile; a blind automatic rotation would break every caller.',
    );
    ack(
      this.secrets.marketplaceApiKey,
      'AwsSolutions-SMG4',
      'Issued by the marketplace, not by AWS: it can only be rotated in the marketplace account and then set here by hand.',
    );
    ack(
      this.secrets.chatWebhooks,
      'AwsSolutions-SMG4',
      'Holds chat incoming-webhook URLs issued by Slack/Discord; they are replaced there, not generated by a rotation function.',
    );
    ack(
      this.secrets.slackSigningSecret,
      'AwsSolutions-SMG4',
      'Issued by Slack for the app; it can only be regenerated in the Slack app settings and then set here by hand.',
    );
    ack(
      this.secrets.callbackSigningSecret,
      'AwsSolutions-SMG4',
      'Rotated by the operator (docs/deploy.md "Set the secrets"): every callback receiver must learn the new key; deliveries carry a signature with the AWSPREVIOUS version too meanwhile, so a blind automatic rotation would still break receivers at the next one.',
    );

    ack(
      this.secrets.sshPasswordSecret,
      'AwsSolutions-SMG4',
      'Rotated by the operator (docs/deploy.md "Set the secrets"): a put-secret-value changes the root password of orders placed after it; CheckOrder logs in to orders placed before it with the AWSPREVIOUS version, so a blind automatic rotation twice within a readiness window would time out those orders.',
    );
    ack(
      this.secrets.callerKeysSecret,
      'AwsSolutions-SMG4',
      'A data key sealing caller key secrets: rotating it would make every stored key undecryptable; the KMS key under it rotates yearly, and a key is rotated by creating a new caller key and revoking the old.',
    );

    ack(
      this.workflow.safetyNetDeadLetterQueue,
      'AwsSolutions-SQS3',
      "It is a dead-letter queue itself (EventBridge target DLQ and the safety net's on-failure destination), with its own alarm; cdk-nag only recognises DLQs named in another queue's redrive policy.",
    );

    Aspects.of(this).add(new AcknowledgeUnavoidableWildcards(), { priority: AspectPriority.READONLY });
  }
}

/**
 * Acknowledges two IAM wildcards CDK's own grants need and nothing can narrow:
 * - `Resource: *` for X-Ray (PutTraceSegments, PutTelemetryRecords, sampling) and for Step Functions'
 *   vended log delivery (logs:*LogDelivery*, resource policies): these actions take no resource ARN;
 * - `<function.Arn>:*` on lambda:InvokeFunction, which LambdaInvoke grants so versions and aliases work.
 * A policy is acknowledged only when every wildcard in it is one of these, so any other `*` still fails
 * cdk-nag. An aspect (run last, at synthesis) so statements added after the stack's constructor count too.
 */
export class AcknowledgeUnavoidableWildcards implements IAspect {
  public visit(node: IConstruct): void {
    if (!(node instanceof iam.Policy)) return;
    const document = Stack.of(node).resolve(node.document) as
      { Statement?: { Effect: string; Action: string | string[]; Resource: unknown }[] } | undefined;
    const findings = new Map<string, string>();
    for (const statement of document?.Statement ?? []) {
      if (statement.Effect !== 'Allow') continue;
      const actions = ([] as string[]).concat(statement.Action);
      for (const resource of ([] as unknown[]).concat(statement.Resource).map((r) => flattenCfnReference(r))) {
        if (!resource.includes('*')) continue;
        if (resource === '*' && actions.every((a) => RESOURCELESS_ACTIONS.has(a))) {
          findings.set(
            'Resource::*',
            'X-Ray tracing and Step Functions log delivery actions support no resource-level permissions (AWS service authorization reference).',
          );
        } else if (/^<[^>]+\.Arn>:\*$/.test(resource) && actions.every((a) => a === 'lambda:InvokeFunction')) {
          findings.set(
            `Resource::${resource}`,
            'CDK LambdaInvoke grants the task function and its versions/aliases (ARN:*); the grant names one function.',
          );
        } else {
          return; // a wildcard we cannot vouch for: leave the whole policy to cdk-nag
        }
      }
    }
    for (const [finding, reason] of findings)
      Validations.of(node).acknowledge({ id: `AwsSolutions-IAM5[${finding}]`, reason });
  }
}
