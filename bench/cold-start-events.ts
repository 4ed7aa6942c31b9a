/**
 * One representative event per function for the first-invocation figure: what API Gateway, Step
 * Functions, EventBridge or SQS would hand the function, signed where the route is signed. Each
 * run gets its own task id and source address, so runs do not see each other's records or windows.
 */
import { createHmac, randomUUID } from 'node:crypto';
import { EXECUTION_ENDED_ENTRY, FLEET_WATCH_ENTRY, JOB_WORKER_ENTRY, ROUTES, WORKFLOW_TASKS } from '../lib/routes';

export interface EventContext {
  readonly webhookSecret: string;
  readonly slackSigningSecret: string;
  /** Where callbacks and Slack response_url replies go (the fake's `/callback`). */
  readonly callbackUrl: string;
  /** A server of the simulator's catalogue (id, GPUs), for the steps after FindServer. */
  readonly server: { readonly id: number; readonly gpu_array: readonly string[]; readonly price_usd: number | null };
  readonly queueArn: string;
}

const hmac = (secret: string, data: string): string => createHmac('sha256', secret).update(data).digest('hex');

const apiEvent = (
  method: 'GET' | 'POST' | 'PUT' | 'DELETE',
  path: string,
  run: number,
  body?: string,
  headers: Record<string, string> = {},
  pathParameters?: Record<string, string>,
) => ({
  version: '2.0',
  routeKey: `${method} ${path}`,
  rawPath: path,
  rawQueryString: '',
  headers: { 'content-type': 'application/json', ...headers },
  ...(pathParameters ? { pathParameters } : {}),
  requestContext: {
    accountId: '123456789012',
    apiId: 'api',
    domainName: 'api.example.com',
    domainPrefix: 'api',
    http: { method, path, protocol: 'HTTP/1.1', sourceIp: `198.51.100.${run + 1}`, userAgent: 'bench' },
    requestId: `bench-${run}`,
    routeKey: `${method} ${path}`,
    stage: '$default',
    time: '12/Mar/2020:19:03:58 +0000',
    timeEpoch: 1583348638390,
  },
  ...(body !== undefined ? { body } : {}),
  isBase64Encoded: false,
});

const signedPost = (ctx: EventContext, path: string, run: number, body: object) => {
  const text = JSON.stringify(body);
  return apiEvent('POST', path, run, text, { 'x-webhook-signature': hmac(ctx.webhookSecret, text) });
};

const workflowState = (ctx: EventContext, taskId: string, extra: object = {}) => ({
  task_id: taskId,
  request: {
    gpu_type: 'RTX',
    image: 'nvidia/cuda:12.4.1-base-ubuntu22.04',
    currency: 'NATIVE-Blockchain',
    ports: { '22': 'tcp' },
    use_spot: false,
    callback_url: ctx.callbackUrl,
  },
  origin: { source: 'webhook' },
  timing: { poll_interval_seconds: 5, ready_timeout_seconds: 120, soft_deadline: Math.floor(Date.now() / 1000) + 300 },
  ...extra,
});

export interface FirstInvocation {
  readonly event: unknown;
  /** A task record the function expects to exist already (the API created it): seeded before the call. */
  readonly existingTask?: { readonly task_id: string; readonly kind: 'create-order' | 'status' };
}

/** The event the function at `entry` gets on its first call in run `run`. */
export const firstInvocation = (entry: string, run: number, ctx: EventContext): FirstInvocation => {
  const taskId = randomUUID();
  const route = ROUTES.find((r) => r.entry === entry);
  const event = firstInvocationEvent(entry, run, ctx, taskId);
  // API routes create their task; the fleet watch works on no task.
  if (route || entry === FLEET_WATCH_ENTRY) return { event };
  return { event, existingTask: { task_id: taskId, kind: entry === JOB_WORKER_ENTRY ? 'status' : 'create-order' } };
};

const firstInvocationEvent = (entry: string, run: number, ctx: EventContext, taskId: string): unknown => {
  const search = {
    server: { id: ctx.server.id, gpu_array: [...ctx.server.gpu_array], price_usd: ctx.server.price_usd },
    attempt: 1,
    excluded: [],
  };
  const placement = { retry: false, order_id: 900_000 + run, server_id: ctx.server.id, placed_at: Date.now() - 1_000 };
  const route = ROUTES.find((r) => r.entry === entry);
  if (route) {
    switch (route.id) {
      case 'CreateOrder':
        return signedPost(ctx, route.path, run, { gpu_type: 'RTX 4090', max_price: 2, callback_url: ctx.callbackUrl });
      case 'CancelOrder':
        return signedPost(ctx, route.path, run, { order_id: 123, callback_url: ctx.callbackUrl });
      case 'ExtendOrder':
        return signedPost(ctx, route.path, run, { order_id: 123, hours: 2, callback_url: ctx.callbackUrl });
      case 'SetSpotPrice':
        return signedPost(ctx, route.path, run, { order_id: 123, desired_price: 0.4, callback_url: ctx.callbackUrl });
      case 'PriceAlert':
        return signedPost(ctx, route.path, run, {
          gpu_type: 'RTX 4090',
          target_price: 0.5,
          callback_url: ctx.callbackUrl,
        });
      case 'Status':
        return signedPost(ctx, route.path, run, { callback_url: ctx.callbackUrl });
      case 'GetTask': {
        const path = `/webhook/tasks/${taskId}`;
        return {
          ...apiEvent(
            'GET',
            path,
            run,
            undefined,
            { 'x-webhook-signature': hmac(ctx.webhookSecret, path) },
            { task_id: taskId },
          ),
          routeKey: 'GET /webhook/tasks/{task_id}',
        };
      }
      case 'SlackCommand': {
        const body = new URLSearchParams({
          command: '/gpu',
          text: 'status',
          user_id: 'U1',
          response_url: ctx.callbackUrl,
        }).toString();
        const ts = String(Math.floor(Date.now() / 1000));
        return apiEvent('POST', route.path, run, body, {
          'content-type': 'application/x-www-form-urlencoded',
          'x-slack-request-timestamp': ts,
          'x-slack-signature': `v0=${hmac(ctx.slackSigningSecret, `v0:${ts}:${body}`)}`,
        });
      }
      default:
        return apiEvent(route.method, route.path, run);
    }
  }
  switch (entry) {
    case WORKFLOW_TASKS.FindServer:
    case WORKFLOW_TASKS.ReserveQuota:
      return workflowState(ctx, taskId);
    case WORKFLOW_TASKS.PlaceOrder:
      return workflowState(ctx, taskId, { search });
    case WORKFLOW_TASKS.CheckOrder:
      return workflowState(ctx, taskId, { search, placement });
    case WORKFLOW_TASKS.CancelOrder:
      return workflowState(ctx, taskId, { search, placement, error: { Error: 'States.Timeout', Cause: 'bench' } });
    case WORKFLOW_TASKS.ReportResult:
      return workflowState(ctx, taskId, {
        search,
        placement,
        check: {
          ready: true,
          timedOut: false,
          order: { order_id: placement.order_id, status: 'running', ssh_connection: 'ssh root@203.0.113.9 -p 22' },
        },
      });
    case EXECUTION_ENDED_ENTRY:
      return {
        version: '0',
        id: `bench-${run}`,
        'detail-type': 'Step Functions Execution Status Change',
        source: 'aws.states',
        account: '123456789012',
        time: new Date().toISOString(),
        region: 'us-east-1',
        resources: [],
        detail: {
          name: taskId,
          status: 'TIMED_OUT',
          input: JSON.stringify({
            task_id: taskId,
            request: { callback_url: ctx.callbackUrl },
            origin: { source: 'webhook' },
          }),
          error: null,
          cause: null,
        },
      };
    case JOB_WORKER_ENTRY: {
      const body = JSON.stringify({
        task_id: taskId,
        origin: { source: 'webhook' },
        kind: 'status',
        input: { callback_url: ctx.callbackUrl },
      });
      return {
        Records: [
          {
            messageId: `bench-${run}`,
            receiptHandle: `bench-receipt-${run}`,
            body,
            attributes: {
              ApproximateReceiveCount: '1',
              SentTimestamp: String(Date.now()),
              SenderId: 'bench',
              ApproximateFirstReceiveTimestamp: String(Date.now()),
            },
            messageAttributes: {},
            md5OfBody: '',
            eventSource: 'aws:sqs',
            eventSourceARN: ctx.queueArn,
            awsRegion: 'us-east-1',
          },
        ],
      };
    }
    case FLEET_WATCH_ENTRY:
      // The EventBridge schedule's event; the sweep reads no field of it.
      return {
        version: '0',
        id: `bench-${run}`,
        'detail-type': 'Scheduled Event',
        source: 'aws.events',
        account: '123456789012',
        time: new Date().toISOString(),
        region: 'us-east-1',
        resources: ['arn:aws:events:us-east-1:123456789012:rule/bench-fleet-watch'],
        detail: {},
      };
    default:
      return {};
  }
};
