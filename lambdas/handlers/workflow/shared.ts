/**
 * What every create-order workflow task shares: the state document schema (zod), the input error,
 * and the task-id log key. The state machine passes the whole state document to each task.
 */
import * as z from 'zod';
import type { WorkflowState } from '../../domain/create-order-steps';
import { InvalidWorkflowInputError } from '../../domain/errors';
import { beginInvocation, tagTask } from '../../adapters/observability';
import { PortsSchema } from '../../../contract/shapes';
import { TaskOriginSchema } from '../../domain/task';

/** The error text of a caught Step Functions error: the Lambda errorMessage inside Cause, else the error name. */
export const caughtErrorText = (error: { readonly Error: string; readonly Cause?: string }): string => {
  if (!error.Cause) return error.Error;
  try {
    const cause: unknown = JSON.parse(error.Cause);
    if (typeof cause === 'object' && cause !== null && 'errorMessage' in cause && typeof cause.errorMessage === 'string' && cause.errorMessage.length > 0) {
      return cause.errorMessage;
    }
  } catch {
    // Cause is plain text for non-Lambda errors (States.Timeout, States.Runtime ...).
  }
  return error.Cause;
};

const ChosenServerSchema = z.object({
  id: z.number().int(),
  gpu_array: z.array(z.string()),
  price_usd: z.number().nullable(),
  spot_bid: z.number().positive().optional(),
});

export const WorkflowStateSchema = z.object({
  task_id: z.string().min(1),
  request: z.object({
    gpu_type: z.string().min(1),
    max_price: z.number().nonnegative().optional(),
    image: z.string().min(1),
    currency: z.string().min(1),
    ports: PortsSchema,
    env: z.record(z.string(), z.string()).optional(),
    use_spot: z.boolean(),
    callback_url: z.string().optional(),
    /** Lease in hours (issue 14); absent = no lease. */
    max_hours: z.number().positive().optional(),
  }),
  origin: TaskOriginSchema,
  timing: z.object({
    poll_interval_seconds: z.number().positive(),
    ready_timeout_seconds: z.number().positive(),
    /** Epoch seconds. */
    soft_deadline: z.number(),
  }),
  search: z.object({ server: ChosenServerSchema, attempt: z.number().int().positive(), excluded: z.array(z.number().int()) }).optional(),
  placement: z
    .discriminatedUnion('retry', [
      z.object({ retry: z.literal(false), order_id: z.number().int(), server_id: z.number().int(), placed_at: z.number() }),
      z.object({ retry: z.literal(true), server_id: z.number().int(), reason: z.string() }),
    ])
    .optional(),
  check: z
    .object({
      ready: z.boolean(),
      timedOut: z.boolean(),
      reason: z.enum(['ready_timeout', 'soft_deadline']).optional(),
      order: z.object({ order_id: z.number().int(), status: z.string(), ssh_connection: z.string().nullable() }).optional(),
      ready_at: z.number().optional(),
    })
    .optional(),
  cancel: z
    .object({ cancelled: z.boolean(), order_id: z.number().int().optional(), note: z.enum(['no_order', 'already_cancelled', 'not_cancellable']).optional() })
    .optional(),
  // What a Catch stores at `$.error` (Step Functions' shape), read into the domain's CaughtError.
  error: z.object({ Error: z.string(), Cause: z.string().optional() })
    .transform((caught) => ({ name: caught.Error, message: caughtErrorText(caught) }))
    .optional(),
});

/**
 * Validates a task's input into the state document; logs (and the trace) carry its task id from
 * here on. Every task handler calls this first, so it also opens the invocation's task scope: a
 * task id of an earlier (or, locally, a concurrent) invocation never labels this one's lines.
 */
export const parseWorkflowState = (input: unknown): WorkflowState => {
  beginInvocation();
  const parsed = WorkflowStateSchema.safeParse(input);
  if (!parsed.success) {
    throw new InvalidWorkflowInputError(`invalid workflow state: ${parsed.error.issues.map((i) => `${i.path.join('.')}: ${i.message}`).join('; ')}`);
  }
  tagTask(parsed.data.task_id);
  return parsed.data as WorkflowState;
};

/** The clock handlers pass into the domain; tests inject their own. */
export type Clock = () => number;
export const systemClock: Clock = () => Date.now();
