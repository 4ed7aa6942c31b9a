/**
 * The relay's HTTP API: one least-privilege function per route of lib/routes.ts, a throttled
 * `$default` stage and JSON access logs.
 */
import { Duration, RemovalPolicy, Stack } from 'aws-cdk-lib';
import * as apigw from 'aws-cdk-lib/aws-apigateway';
import * as apigwv2 from 'aws-cdk-lib/aws-apigatewayv2';
import { HttpLambdaIntegration } from 'aws-cdk-lib/aws-apigatewayv2-integrations';
import type * as dynamodb from 'aws-cdk-lib/aws-dynamodb';
import type * as lambda from 'aws-cdk-lib/aws-lambda';
import * as logs from 'aws-cdk-lib/aws-logs';
import type * as sfn from 'aws-cdk-lib/aws-stepfunctions';
import type * as sqs from 'aws-cdk-lib/aws-sqs';
import { Construct } from 'constructs';
import { ROUTES, type RouteDefinition } from '../../contract/routes';
import { RelayFunction } from './relay-function';
import type { RelaySecrets, SecretName } from './relay-secrets';
import { apiUser, grantTableAccess } from './table-access';

export interface WebhookApiProps {
  readonly table: dynamodb.ITable;
  readonly secrets: RelaySecrets;
  /** Base environment of every route function (config values); secret ARNs come with `secrets.bindTo`. */
  readonly environment: Readonly<Record<string, string>>;
  /** Target of routes with the `startExecution` permission. */
  readonly stateMachine: sfn.IStateMachine;
  /** Target of routes with the `sendMessage` permission. */
  readonly jobQueue: sqs.IQueue;
  /**
   * Stage throttling: the outer guard in front of the per-address rate limit.
   * @default - no stage throttling
   */
  readonly throttle?: apigwv2.ThrottleSettings;
  /** @default logs.RetentionDays.ONE_MONTH */
  readonly logRetention?: logs.RetentionDays;
  /** @default ROUTES (lib/routes.ts) */
  readonly routes?: readonly RouteDefinition[];
}

/**
 * Secrets a route reads: signed routes the webhook key, the marketplace route the API key, Slack its
 * signing secret. The caller-keys data key (issue 38 §4): every signed route verifies signatures made
 * with a named caller key (X-Webhook-Key-Id), which is an HMAC with that key's secret, kept sealed
 * in the table: the route opens it, so it needs the data key. Create-order and price-alert also seal
 * an order's access secrets with it, Slack's rent its Jupyter token, and get-task opens that token.
 * No unsigned route other than Slack has it. The marketplace route keeps the API key: a summary is
 * served from the shared listing cache only while a read younger than the poll interval is there, and
 * a fill is a marketplace read, which needs the key (docs/security.md "Who reads which secret").
 */
export const routeSecrets = (route: RouteDefinition): SecretName[] => {
  const names: SecretName[] = [];
  if (route.signed) names.push('webhook', 'callerKeys');
  if (route.permissions.includes('marketplace')) names.push('apiKey');
  // Slack's rent seals the order's generated Jupyter token (issue 37 §3) under the caller keys' data key.
  if (route.path === '/slack/command') names.push('slack', 'callerKeys');
  return names;
};

/** Whether a route touches the table: the rate limiter, task records and marketplace pacing all live there. */
export const routeUsesTable = (route: RouteDefinition): boolean =>
  route.rateLimited || route.permissions.includes('writeTasks') || route.permissions.includes('marketplace');

/**
 * Memory of the route functions: callers wait on their cold starts, and Lambda's CPU share grows with
 * memory (a full vCPU at 1,769 MB), so 512 MB about halves a CPU-bound init compared with 256 MB
 * (BENCHMARKS.md "Cold start").
 */
export const API_MEMORY_MB = 512;

/** API Gateway's integration timeout (HTTP APIs: 30 s at most; the measured 29 s is the safe figure). */
export const API_GATEWAY_TIMEOUT_SECONDS = 29;

/**
 * Lambda timeout of every route's function, under API Gateway's limit so the function's own answer
 * reaches the caller. A healthy accept takes well under a second (at most 7 AWS calls, 7 s allowed
 * in test/unit/time-budgets.test.ts); 25 s also leaves room for one hung AWS call (12.2 s at worst,
 * lambdas/adapters/aws-clients.ts), so a stalled hand-off still ends in the route's own undo (record
 * removed, Idempotency-Key released) and JSON 503, never in a Lambda timeout that would leave a
 * queued task with nothing behind it. The marketplace route relies on the client's budget
 * (remainingMs) to answer its JSON 500 before the timeout.
 */
export const API_ROUTE_TIMEOUT_SECONDS = 25;

export const routeTimeoutSeconds = (_route: RouteDefinition): number => API_ROUTE_TIMEOUT_SECONDS;

/** The API access log group's name: under `/aws/vendedlogs/`, per stack. */
export const apiAccessLogGroupName = (stackName: string): string => `/aws/vendedlogs/${stackName}/api-access`;

export class WebhookApi extends Construct {
  public readonly httpApi: apigwv2.HttpApi;
  public readonly stage: apigwv2.HttpStage;
  public readonly accessLogGroup: logs.LogGroup;
  /** Route functions by route id (lib/routes.ts). */
  public readonly functions: Record<string, RelayFunction> = {};

  public constructor(scope: Construct, id: string, props: WebhookApiProps) {
    super(scope, id);
    const routes = props.routes ?? ROUTES;
    const retention = props.logRetention ?? logs.RetentionDays.ONE_MONTH;

    this.httpApi = new apigwv2.HttpApi(this, 'HttpApi', {
      description: 'GPU order relay: signed webhooks, Slack command, marketplace summary',
      // The default stage is created below: HttpApi's own cannot take throttling or access logs.
      createDefaultStage: false,
    });

    this.accessLogGroup = new logs.LogGroup(this, 'AccessLogs', {
      // Under /aws/vendedlogs/ (issue 21 item 7): API Gateway's log delivery then needs no entry of its
      // own in the account's one CloudWatch Logs resource policy (5,120 characters, shared by all).
      logGroupName: apiAccessLogGroupName(Stack.of(this).stackName),
      retention,
      // A named group: retained, it would block re-creating the stack under the same name.
      removalPolicy: RemovalPolicy.DESTROY,
    });
    this.stage = new apigwv2.HttpStage(this, 'DefaultStage', {
      httpApi: this.httpApi,
      stageName: '$default',
      autoDeploy: true,
      throttle: props.throttle,
      accessLogSettings: {
        destination: new apigwv2.LogGroupLogDestination(this.accessLogGroup),
        // No headers and no body: X-Webhook-Signature and payloads stay out of the logs.
        format: apigw.AccessLogFormat.custom(
          JSON.stringify({
            requestId: '$context.requestId',
            sourceIp: '$context.identity.sourceIp',
            requestTime: '$context.requestTime',
            routeKey: '$context.routeKey',
            status: '$context.status',
            responseLength: '$context.responseLength',
            responseLatency: '$context.responseLatency',
            integrationLatency: '$context.integrationLatency',
            integrationError: '$context.integrationErrorMessage',
          }),
        ),
      },
    });

    for (const route of routes) {
      const relayFn = new RelayFunction(this, route.id, {
        entry: route.entry,
        description: `GPU relay: ${route.method} ${route.path}`,
        timeout: Duration.seconds(routeTimeoutSeconds(route)),
        memorySize: API_MEMORY_MB,
        logRetention: retention,
        environment: {
          ...props.environment,
          TABLE_NAME: props.table.tableName,
          ...(route.permissions.includes('startExecution')
            ? { STATE_MACHINE_ARN: props.stateMachine.stateMachineArn }
            : {}),
          ...(route.permissions.includes('sendMessage') ? { JOB_QUEUE_URL: props.jobQueue.queueUrl } : {}),
        },
      });
      const fn = relayFn.fn;
      // Only the items the route's code touches (lib/constructs/table-access.ts); nothing if none.
      grantTableAccess(props.table, fn, apiUser(route));
      if (route.permissions.includes('startExecution')) props.stateMachine.grantStartExecution(fn);
      // SendMessage only: grantSendMessages adds GetQueueAttributes and GetQueueUrl, which no route calls
      // (unexercised in every e2e run: npm run iam:report, issue 30).
      if (route.permissions.includes('sendMessage')) props.jobQueue.grant(fn, 'sqs:SendMessage');
      props.secrets.bindTo(fn, routeSecrets(route));

      this.httpApi.addRoutes({
        path: route.path,
        methods: [apigwv2.HttpMethod[route.method]],
        integration: new HttpLambdaIntegration(`${route.id}Integration`, fn),
      });
      this.functions[route.id] = relayFn;
    }
  }

  /** The invoke URL of the `$default` stage. */
  public get url(): string {
    return this.stage.url;
  }

  /** Route functions as plain Lambda functions, by route id. */
  public lambdaFunctions(): Record<string, lambda.IFunction> {
    return Object.fromEntries(Object.entries(this.functions).map(([key, relayFn]) => [key, relayFn.fn]));
  }
}
