/**
 * Bench 2: CPU of the accept path. A signed create-order through the real middleware chain
 * (rate limit → body → signature → JSON → zod → accept), in-process, with the ports faked at
 * memory speed; beside the floor of HMAC verification alone.
 */
import { performance } from 'node:perf_hooks';
import type { APIGatewayProxyEventV2, Context } from 'aws-lambda';
import { relayEnvSchema } from '../lambdas/adapters/env';
import { hmacHex, signatureMatches, signedBytes } from '../lambdas/domain/signing';
import { slideWindow } from '../lambdas/domain/sliding-window';
import type {
  IdempotencyStore,
  JobQueue,
  SlidingWindow,
  TaskRepository,
  WorkflowStarter,
} from '../lambdas/domain/ports';
import type { TaskRecord } from '../lambdas/domain/task';
import { createCreateOrderHandler } from '../lambdas/handlers/api/create-order';

const SECRET = 'bench-secret-0123456789';
const WARMUP = 2_000;
const RUNS = 20_000;

/** Memory-speed ports. */
const memoryPorts = () => {
  const windows = new Map<string, { id: string; t: number }[]>();
  const tasks = new Map<string, TaskRecord>();
  const window: SlidingWindow = {
    hit: async (key, opts) => {
      const out = slideWindow({
        events: windows.get(key) ?? [],
        now: opts.now,
        windowMs: opts.windowMs,
        limit: opts.limit,
        eventId: opts.eventId,
      });
      windows.set(key, [...out.events]);
      return { allowed: out.allowed, retryAfterMs: out.retryAfterMs, count: out.count };
    },
  };
  const repo: TaskRepository = {
    create: async (r) => {
      tasks.set(r.task_id, r);
    },
    get: async (id) => tasks.get(id),
    update: async () => undefined,
    finish: async () => true,
    markDelivered: async () => undefined,
    remove: async (id) => {
      tasks.delete(id);
    },
  };
  const workflow: WorkflowStarter = { start: async () => undefined };
  const queue: JobQueue = { send: async () => undefined };
  const idempotency: IdempotencyStore = { claim: async (_k, id) => id, release: async () => undefined };
  return { window, repo, workflow, queue, idempotency };
};

const pct = (sorted: number[], p: number): number =>
  sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))];

export interface AcceptPathFigures {
  readonly runs: number;
  readonly p50Us: number;
  readonly p99Us: number;
  readonly hmacP50Us: number;
  readonly hmacP99Us: number;
  readonly ratioP50: number;
  readonly withinBudget: boolean;
}

export const benchAcceptPath = async (): Promise<AcceptPathFigures> => {
  // TABLE_NAME and MARKETPLACE_URL have no defaults (the env contract); nothing here reaches either.
  const env = relayEnvSchema().parse({
    WEBHOOK_SECRET: SECRET,
    MAX_REQUESTS_PER_MINUTE: '600',
    TABLE_NAME: 'relay',
    MARKETPLACE_URL: 'http://127.0.0.1:5001',
  });
  const ports = memoryPorts();
  let n = 0;
  const handler = createCreateOrderHandler(() => ({
    env,
    window: ports.window,
    webhookSecrets: async () => [SECRET],
    tasks: ports.repo,
    workflow: ports.workflow,
    queue: ports.queue,
    idempotency: ports.idempotency,
    newTaskId: () => `task-${(n += 1)}`,
  }));
  const body = JSON.stringify({ gpu_type: 'RTX 4090', max_price: 0.5, callback_url: 'https://ci.example.com/hook' });
  const signature = hmacHex(SECRET, body);
  const context = {
    awsRequestId: 'bench',
    functionName: 'bench',
    getRemainingTimeInMillis: () => 10_000,
  } as unknown as Context;
  const event = (i: number): APIGatewayProxyEventV2 =>
    ({
      version: '2.0',
      routeKey: 'POST /webhook/create-order',
      rawPath: '/webhook/create-order',
      rawQueryString: '',
      headers: { 'content-type': 'application/json', 'x-webhook-signature': signature },
      // A different address per request keeps every rolling window short, as real traffic would.
      requestContext: {
        http: {
          method: 'POST',
          path: '/webhook/create-order',
          protocol: 'HTTP/1.1',
          sourceIp: `10.0.${(i >> 8) & 255}.${i & 255}`,
          userAgent: 'bench',
        },
        requestId: `r${i}`,
      },
      body,
      isBase64Encoded: false,
    }) as unknown as APIGatewayProxyEventV2;

  const samples: number[] = [];
  for (let i = 0; i < WARMUP + RUNS; i += 1) {
    const e = event(i);
    const t = performance.now();
    const res = await handler(e, context);
    const dt = performance.now() - t;
    if (typeof res !== 'object' || res.statusCode !== 202)
      throw new Error(`accept path answered ${JSON.stringify(res)}`);
    if (i >= WARMUP) samples.push(dt * 1000);
  }
  const hmac: number[] = [];
  const bytes = signedBytes(body);
  for (let i = 0; i < WARMUP + RUNS; i += 1) {
    const t = performance.now();
    if (!signatureMatches([SECRET], bytes, signature)) throw new Error('hmac floor failed');
    if (i >= WARMUP) hmac.push((performance.now() - t) * 1000);
  }
  samples.sort((a, b) => a - b);
  hmac.sort((a, b) => a - b);
  const p50Us = pct(samples, 50);
  const p99Us = pct(samples, 99);
  const hmacP50Us = pct(hmac, 50);
  return {
    runs: RUNS,
    p50Us,
    p99Us,
    hmacP50Us,
    hmacP99Us: pct(hmac, 99),
    ratioP50: p50Us / hmacP50Us,
    withinBudget: p99Us <= 1000,
  };
};
