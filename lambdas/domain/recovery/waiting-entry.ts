/** A standing order's entry in the waiting queue (issues 23, 29, 38), from its workflow input. Pure. */
import { definedFields } from '../defined-fields';
import type { CreateOrderWorkflowInput, WaitingTask } from '../ports';

/** The queue entry of a workflow's task, for its `round`-th wait (round 0: admitted, pending). */
export const waitingEntry = (input: CreateOrderWorkflowInput, round: number): WaitingTask => ({
  ...(input.origin.caller ? { key_name: input.origin.caller.key } : {}),
  ...(round === 0 ? { pending: true as const } : {}),
  task_id: input.task_id,
  round,
  accepted_at:
    input.timing.accepted_at ??
    (input.timing.waiting_until as number) * 1000 - (input.request.wait_seconds ?? 0) * 1000,
  waiting_until: input.timing.waiting_until as number,
  request: {
    gpu_type: input.request.gpu_type,
    ...(input.request.max_price !== undefined ? { max_price: input.request.max_price } : {}),
    currency: input.request.currency,
    use_spot: input.request.use_spot,
    ...(input.request.max_hours !== undefined ? { max_hours: input.request.max_hours } : {}),
    // What the sweep must match with (issue 38 §2): an entry without them would be served hosts it cannot use.
    ...definedFields(input.request, ['min_reliability', 'min_rating', 'min_rating_count', 'exclude_servers', 'prefer']),
  },
  poll_interval_seconds: input.timing.poll_interval_seconds,
  ready_timeout_seconds: input.timing.ready_timeout_seconds,
});
