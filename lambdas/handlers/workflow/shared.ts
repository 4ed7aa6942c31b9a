/**
 * What every create-order workflow task shares: the state document schema (zod), the input error,
 * and the task-id log key. The state machine passes the whole state document to each task.
 */
import * as z from 'zod/mini';
import { READINESS_PENDING, type WorkflowState } from '../../domain/create-order/workflow-state';
import { callerSafeText, InvalidWorkflowInputError } from '../../domain/errors';
import type { Context } from 'aws-lambda';
import { beginInvocation, tagTask, withInvocation } from '../../adapters/observability';
import { PortsSchema } from '../../../contract/shapes';
import { HostFilterShape, TaskOriginSchema } from '../../domain/task';
import { ENGLISH_TEXTS } from '../../domain/zod-texts';

/** The error text of a caught Step Functions error: the Lambda errorMessage inside Cause, else the error name. */
export const caughtErrorText = (error: { readonly Error: string; readonly Cause?: string }): string => {
  if (!error.Cause) return callerSafeText(error.Error, error.Error);
  try {
    const cause: unknown = JSON.parse(error.Cause);
    if (
      typeof cause === 'object' &&
      cause !== null &&
      'errorMessage' in cause &&
      typeof cause.errorMessage === 'string' &&
      cause.errorMessage.length > 0
    ) {
      // An AWS service's own text (e.g. DynamoDB's item size) never reaches the caller (issue 29 §5).
      const type = 'errorType' in cause && typeof cause.errorType === 'string' ? cause.errorType : error.Error;
      return callerSafeText(type, cause.errorMessage);
    }
  } catch {
    // Cause is plain text for non-Lambda errors (States.Timeout, States.Runtime ...).
  }
  return error.Cause;
};

const ChosenServerSchema = z.object({
  id: z.int(),
  gpu_array: z.array(z.string()),
  price_usd: z.nullable(z.number()),
  spot_bid: z.optional(z.number().check(z.positive())),
  usd_per_hour: z.optional(z.number().check(z.positive())),
  all_in_usd_per_hour: z.optional(z.number().check(z.positive())),
  usd_per_coin: z.optional(z.number().check(z.positive())),
});

const nonEmpty = () => z.string().check(z.minLength(1));

export const WorkflowStateSchema = z.object({
  task_id: nonEmpty(),
  request: z.object({
    gpu_type: nonEmpty(),
    max_price: z.optional(z.number().check(z.nonnegative())),
    image: nonEmpty(),
    currency: nonEmpty(),
    ports: PortsSchema,
    env: z.optional(z.record(z.string(), z.string())),
    use_spot: z.boolean(),
    // No callback_url: caller URLs stay in the task record (an older execution's is dropped here).
    /** Lease in hours (issue 14); absent = no lease. */
    max_hours: z.optional(z.number().check(z.positive())),
    /** Standing order (issue 23): seconds it may wait for a server. */
    wait_seconds: z.optional(z.int().check(z.nonnegative())),
    /** Outbid recovery (issue 23): carried to the fleet watch with the ready order. */
    on_outbid: z.optional(z.enum(['rebid', 'replace', 'rebid_then_replace'])),
    /** Host filters and choice (issue 31). */
    ...HostFilterShape(),
    prefer: z.optional(z.enum(['cheapest', 'reliable'])),
    /** Access (issue 37): the caller's public key line; the secrets are sealed beside the task record. */
    ssh_public_key: z.optional(z.string()),
  }),
  // The source only: Slack's response_url stays in the task record.
  origin: z.object({ source: TaskOriginSchema().shape.source, caller: TaskOriginSchema().shape.caller }),
  timing: z.object({
    poll_interval_seconds: z.number().check(z.positive()),
    ready_timeout_seconds: z.number().check(z.positive()),
    /** Epoch seconds. */
    soft_deadline: z.number(),
    waiting_until: z.optional(z.number()),
    accepted_at: z.optional(z.number()),
  }),
  resume: z.optional(z.object({ server_id: z.int(), round: z.int().check(z.positive()) })),
  replaces: z.optional(z.object({ task_id: nonEmpty(), order_id: z.int(), server_id: z.int() })),
  search: z.optional(
    z.object({
      server: ChosenServerSchema,
      attempt: z.int().check(z.positive()),
      excluded: z.array(z.int()),
      tried: z.optional(z.array(z.object({ server_id: z.int(), reason: z.string() }))),
      chosen: z.optional(z.string()),
    }),
  ),
  placement: z.optional(
    z.discriminatedUnion('retry', [
      z.object({
        retry: z.literal(false),
        order_id: z.int(),
        server_id: z.int(),
        placed_at: z.number(),
        password_key: z.optional(z.string().check(z.regex(/^[0-9a-f]{12}$/))),
      }),
      z.object({ retry: z.literal(true), server_id: z.int(), reason: z.string() }),
    ]),
  ),
  check: z.optional(
    z.object({
      ready: z.boolean(),
      timedOut: z.boolean(),
      reason: z.optional(z.enum(['ready_timeout', 'soft_deadline'])),
      pending: z.optional(z.enum(READINESS_PENDING)),
      ssh_probe: z.optional(z.string()),
      order: z.optional(
        z.object({
          order_id: z.int(),
          status: z.string(),
          ssh_connection: z.nullable(z.string()),
          http: z.optional(z.record(z.string(), z.string())),
        }),
      ),
      ready_at: z.optional(z.number()),
      ssh_host_key_sha256: z.optional(z.string()),
      ssh_host_key: z.optional(z.string()),
    }),
  ),
  cancel: z.optional(
    z.object({
      cancelled: z.boolean(),
      order_id: z.optional(z.int()),
      note: z.optional(z.enum(['no_order', 'already_cancelled', 'not_cancellable'])),
    }),
  ),
  // What a Catch stores at `$.error` (Step Functions' shape), read into the domain's CaughtError.
  error: z.optional(
    z.pipe(
      z.object({ Error: z.string(), Cause: z.optional(z.string()) }),
      z.transform((caught) => ({ name: caught.Error, message: caughtErrorText(caught) })),
    ),
  ),
});

/**
 * Validates a task's input into the state document; logs (and the trace) carry its task id from
 * here on. Every task handler calls this first, so it also opens the invocation's task scope: a
 * task id of an earlier (or, locally, a concurrent) invocation never labels this one's lines.
 */
export const parseWorkflowState = (input: unknown): WorkflowState => {
  beginInvocation();
  const parsed = WorkflowStateSchema.safeParse(input, ENGLISH_TEXTS);
  if (!parsed.success) {
    throw new InvalidWorkflowInputError(
      `invalid workflow state: ${parsed.error.issues.map((i) => `${i.path.join('.')}: ${i.message}`).join('; ')}`,
    );
  }
  tagTask(parsed.data.task_id);
  return parsed.data as WorkflowState;
};

/** The clock handlers pass into the domain; tests inject their own. */
export type Clock = () => number;
export const systemClock: Clock = () => Date.now();

/**
 * A create-order task's handler builder, from what the task does (`run`): the invocation runs in its
 * own log scope (its function's context, no other invocation's keys), the input is validated into the
 * state document first (parseWorkflowState), then `run` gets it with the deps and the time. The
 * builder takes the deps and the clock, so tests pass fakes.
 */
export const workflowTask =
  <D, R>(run: (state: WorkflowState, deps: D, now: number) => Promise<R>) =>
  (deps: () => D | Promise<D>, clock: Clock = systemClock) =>
  (input: unknown, context?: Context): Promise<R> =>
    withInvocation(context, async () => {
      const state = parseWorkflowState(input);
      return run(state, await deps(), clock());
    });
