/** The deps of the task-accepting routes (the four webhook task routes, extend/spot-price and Slack). */
import type { CallerKeyRecord } from '../../domain/teams/caller-keys';
import type { IdempotencyStore, JobQueue, TaskRepository, WorkflowStarter } from '../../domain/ports';
import type { ChainDeps } from './chain';

/** Deps of the routes that accept tasks. */
export interface AcceptDeps extends ChainDeps {
  readonly tasks: TaskRepository;
  readonly workflow: WorkflowStarter;
  readonly queue: JobQueue;
  readonly idempotency?: IdempotencyStore;
  /** The caller keys, for the Slack route's user → key mapping (issue 24); unwired = no key names a Slack user. */
  readonly callerKeyRecords?: () => Promise<readonly CallerKeyRecord[]>;
  /** @default crypto.randomUUID */
  readonly newTaskId?: () => string;
}

/** A port a function must never use (its IAM role does not allow it), so a wiring bug fails loudly. */
export const unavailablePort = (what: string): WorkflowStarter & JobQueue => ({
  start: async () => {
    throw new Error(`${what} is not available in this function`);
  },
  send: async () => {
    throw new Error(`${what} is not available in this function`);
  },
});
