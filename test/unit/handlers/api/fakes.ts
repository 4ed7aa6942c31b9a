/** In-memory fakes of the ports the API handlers use, and a test env. */
import type { RelayEnv } from '../../../../lambdas/adapters/env';
import { testEnv as lambdaEnv } from '../../../fakes/env';
import type { CreateOrderWorkflowInput, IdempotencyStore, JobQueue, SealedTaskInput, SlidingWindow, TaskRepository, WorkflowStarter } from '../../../../lambdas/domain/ports';
import { slideWindow, type WindowEvent } from '../../../../lambdas/domain/sliding-window';
import type { JobMessage, TaskRecord, TaskResult, TaskState } from '../../../../lambdas/domain/task';

export const SECRET = 'test-webhook-secret';
export const PREVIOUS_SECRET = 'previous-webhook-secret';

/** Slack commands without a signing secret pass (the spec, as under `npm start`); tests of the AWS refusal override it. */
export const testEnv = (overrides: Record<string, string> = {}): RelayEnv =>
  lambdaEnv({ WEBHOOK_SECRET: SECRET, ALLOW_PRIVATE_CALLBACKS: 'false', ALLOW_UNSIGNED_SLACK: 'true', ...overrides });

export class FakeTaskRepository implements TaskRepository {
  public readonly records = new Map<string, TaskRecord>();
  public failCreate: Error | undefined;
  public readonly removed: string[] = [];
  /** What `create` sealed beside each record (the container env). */
  public readonly sealed = new Map<string, SealedTaskInput>();

  public async create(record: TaskRecord, sealed?: SealedTaskInput): Promise<void> {
    if (this.failCreate) throw this.failCreate;
    if (this.records.has(record.task_id)) throw new Error('exists');
    this.records.set(record.task_id, record);
    if (sealed) this.sealed.set(record.task_id, sealed);
  }
  public async get(taskId: string): Promise<TaskRecord | undefined> {
    return this.records.get(taskId);
  }
  public async update(taskId: string, fields: { state?: TaskState }, now: number): Promise<void> {
    const r = this.records.get(taskId);
    if (r) this.records.set(taskId, { ...r, ...fields, updated_at: new Date(now).toISOString() });
  }
  public async finish(taskId: string, state: 'succeeded' | 'failed', result: TaskResult, now: number): Promise<boolean> {
    const r = this.records.get(taskId);
    if (!r || r.state === 'succeeded' || r.state === 'failed') return false;
    const at = new Date(now).toISOString();
    this.records.set(taskId, { ...r, state, result, updated_at: at, finished_at: at });
    return true;
  }
  public async remove(taskId: string): Promise<void> {
    this.removed.push(taskId);
    this.records.delete(taskId);
    this.sealed.delete(taskId);
  }
}

export class FakeWorkflow implements WorkflowStarter {
  public readonly started: { taskId: string; input: CreateOrderWorkflowInput }[] = [];
  public fail: Error | undefined;
  public async start(taskId: string, input: CreateOrderWorkflowInput): Promise<void> {
    if (this.fail) throw this.fail;
    this.started.push({ taskId, input });
  }
}

export class FakeQueue implements JobQueue {
  public readonly sent: JobMessage[] = [];
  public fail: Error | undefined;
  public async send(message: JobMessage): Promise<void> {
    if (this.fail) throw this.fail;
    this.sent.push(message);
  }
}

export class FakeIdempotencyStore implements IdempotencyStore {
  public readonly keys = new Map<string, { taskId: string; expiresAt: number }>();
  public readonly released: string[] = [];
  public async claim(key: string, taskId: string, now: number, ttlSeconds: number): Promise<string> {
    const bound = this.keys.get(key);
    if (bound && bound.expiresAt > now) return bound.taskId;
    this.keys.set(key, { taskId, expiresAt: now + ttlSeconds * 1000 });
    return taskId;
  }
  public async release(key: string, taskId: string): Promise<void> {
    if (this.keys.get(key)?.taskId === taskId) {
      this.keys.delete(key);
      this.released.push(key);
    }
  }
}

/** The SlidingWindow port over the pure window math, in memory. */
export class FakeSlidingWindow implements SlidingWindow {
  public readonly events = new Map<string, readonly WindowEvent[]>();
  public readonly keysHit: string[] = [];
  public fail: Error | undefined;
  public async hit(key: string, opts: { now: number; windowMs: number; limit: number; eventId: string }) {
    if (this.fail) throw this.fail;
    this.keysHit.push(key);
    const outcome = slideWindow({ events: this.events.get(key) ?? [], ...opts });
    if (outcome.changed) this.events.set(key, outcome.events);
    return { allowed: outcome.allowed, retryAfterMs: outcome.retryAfterMs, count: outcome.count };
  }
}

/** Every fake an accepting handler needs, with a fixed clock and sequential task ids. */
export const acceptFakes = (envOverrides: Record<string, string> = {}) => {
  let n = 0;
  const fakes = {
    env: testEnv(envOverrides),
    window: new FakeSlidingWindow(),
    tasks: new FakeTaskRepository(),
    workflow: new FakeWorkflow(),
    queue: new FakeQueue(),
    idempotency: new FakeIdempotencyStore(),
    secrets: [SECRET] as string[],
    slackSecret: undefined as string | undefined,
    clock: 1_700_000_000_000,
  };
  const deps = {
    env: fakes.env,
    window: fakes.window,
    tasks: fakes.tasks,
    workflow: fakes.workflow,
    queue: fakes.queue,
    idempotency: fakes.idempotency,
    webhookSecrets: async () => fakes.secrets,
    slackSigningSecret: async () => fakes.slackSecret,
    now: () => fakes.clock,
    newTaskId: () => {
      n += 1;
      return `00000000-0000-4000-8000-${String(n).padStart(12, '0')}`;
    },
  };
  return { fakes, deps };
};

export interface ParsedResult {
  readonly statusCode: number;
  readonly headers: Record<string, string>;
  readonly body: Record<string, unknown>;
}

/** Reads a handler's structured result; fails the test when the body is not JSON. */
export const parseResult = (result: unknown): ParsedResult => {
  const r = result as { statusCode: number; headers?: Record<string, string>; body?: string };
  return { statusCode: r.statusCode, headers: r.headers ?? {}, body: (r.body ? JSON.parse(r.body) : null) as Record<string, unknown> };
};
