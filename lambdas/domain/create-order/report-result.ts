/** ReportResult: ends the task with its one result (see ./workflow-state.ts for the workflow). */
import { hostAvoidedText, orderReadyText, type HostAvoided } from '../requests/chat-messages';
import { outcomesOfTask, type HostRecords } from '../hosts/host-records';
import { completeTask } from '../requests/complete-task';
import { SoftTimeoutError } from '../errors';
import { leaseExpiresAt } from '../leases/lease';
import type { LeaseBook } from '../leases/lease-ports';
import type { Notifier, ServerClaims, TaskRepository } from '../ports';
import { failure } from '../task';
import type { CreateOrderSuccess, FailureResult, TaskOrigin, TaskRecord, TaskResult } from '../task';
import type { Settlement, SpendStore } from '../teams/spend-budget';
import { keyNameOf } from '../teams/caller-keys';
import type { ReadinessPending, WorkflowState } from './workflow-state';
import { orderAccess, withJupyterToken, type OrderAccess } from '../access/order-access';
import { parseSshEndpoint } from '../leases/ssh-endpoint';

/** The name ReportResult finishes tasks under (TaskRepository.finish). */
export const REPORT_RESULT_FINISHER = 'ReportResult';

/** What a timeout failure adds when the order ran but was not ready (READINESS_PROBE=ssh). */
const PENDING_TEXT: Readonly<Record<ReadinessPending, string>> = {
  ssh_not_answering: 'the order was running but its ssh endpoint did not answer',
  ssh_address_refused:
    'the order was running but its ssh address is private, loopback or reserved, which the relay does not connect to',
  ssh_endpoint_unknown: 'the order was running but its ssh endpoint could not be read',
  // READINESS_PROBE=ssh-login (issue 31 §4): a banner answered but the order's password never worked.
  ssh_login_refused: 'ssh login refused',
};

/** The spec's timeout text, with the configured readiness window, and what was missing when the order ran. */
export const readyTimeoutMessage = (seconds: number, pending?: ReadinessPending): string =>
  `Order creation timed out after ${seconds} s${pending ? `: ${PENDING_TEXT[pending]}` : ''}`;

/**
 * Readiness in Unix seconds: the poll that found the order running; for a state written before
 * CheckOrder recorded it, the placement (earlier, so a lease never runs longer than asked).
 */
const readyAtSeconds = (state: WorkflowState): number | undefined => {
  const ms =
    state.check?.ready_at ?? (state.placement && !state.placement.retry ? state.placement.placed_at : undefined);
  return ms === undefined ? undefined : Math.floor(ms / 1000);
};

/** The end of the order's lease (Unix seconds), when the request has one and the order is ready. */
export const workflowLeaseExpiresAt = (state: WorkflowState): number | undefined => {
  const readyAt = readyAtSeconds(state);
  return state.request.max_hours === undefined || readyAt === undefined
    ? undefined
    : leaseExpiresAt(readyAt, state.request.max_hours);
};

/** The result's `access` block (issue 37 §4) from what the readiness check saw; nothing when it saw none. */
const accessOf = (check: NonNullable<WorkflowState['check']>): { access?: OrderAccess } => {
  const endpoint = parseSshEndpoint(check.order?.ssh_connection ?? null);
  const access = orderAccess({
    ...(endpoint ? { ssh: endpoint } : {}),
    ...(check.ssh_host_key !== undefined ? { hostKey: check.ssh_host_key } : {}),
    ...(check.order?.http ? { http: check.order.http } : {}),
  });
  return access ? { access } : {};
};

/** The task result the state document stands for. */
export const workflowResult = (state: WorkflowState): CreateOrderSuccess | FailureResult => {
  if (state.error) return failure(state.error.message);
  const check = state.check;
  if (check?.ready && check.order && state.search) {
    const leaseEnd = workflowLeaseExpiresAt(state);
    return {
      success: true,
      order_id: check.order.order_id,
      server_id: state.search.server.id,
      status: check.order.status,
      ssh_connection: check.order.ssh_connection ?? '',
      gpu: state.search.server.gpu_array,
      price_usd: state.search.server.price_usd,
      ...(state.search.server.usd_per_hour !== undefined ? { bid_usd_per_hour: state.search.server.usd_per_hour } : {}),
      ...(state.search.server.all_in_usd_per_hour !== undefined
        ? { all_in_usd_per_hour: state.search.server.all_in_usd_per_hour }
        : {}),
      ...(leaseEnd !== undefined ? { lease_expires_at: leaseEnd } : {}),
      ...(state.search.chosen !== undefined ? { chosen: state.search.chosen } : {}),
      ...(check.ssh_host_key_sha256 !== undefined ? { ssh_host_key_sha256: check.ssh_host_key_sha256 } : {}),
      ...accessOf(check),
    };
  }
  if (check?.timedOut) {
    return failure(
      check.reason === 'soft_deadline'
        ? new SoftTimeoutError().message
        : readyTimeoutMessage(state.timing.ready_timeout_seconds, check.pending),
    );
  }
  return failure('Order creation ended without a result');
};

/**
 * Where a create-order task's result goes: its record's callback_url and origin (with Slack's
 * response_url). The workflow input carries neither URL (it is kept in the execution history); a
 * task without a record (none in production: ingress writes it before the start) has no callback.
 */
export const deliveryTargets = (
  record: Pick<TaskRecord, 'request' | 'origin'> | undefined,
  fallbackOrigin: TaskOrigin,
): { readonly callbackUrl?: string; readonly eventsUrl?: string; readonly origin: TaskOrigin } => {
  const url = record?.request.callback_url;
  const callbackUrl = typeof url === 'string' && url.length > 0 ? url : undefined;
  // lifecycle_events false (issue 28): the callback is for the result only (the CLI's --wait listener).
  const eventsUrl = record?.request.lifecycle_events === false ? undefined : callbackUrl;
  return {
    ...(callbackUrl !== undefined ? { callbackUrl } : {}),
    ...(eventsUrl !== undefined ? { eventsUrl } : {}),
    origin: record?.origin ?? fallbackOrigin,
  };
};

export interface ReportResultDeps {
  readonly tasks: TaskRepository;
  readonly notifier: Notifier;
  readonly claims: Pick<ServerClaims, 'release'>;
  /** Where placed orders are recorded for the fleet watch (and their leases). */
  readonly leases: Pick<LeaseBook, 'track'>;
  /** Spending (issue 24): a ready order's readiness is recorded; a failed task's reservation is settled. Absent: nothing. */
  readonly spend?: Pick<SpendStore, 'started' | 'settle'>;
  /** The relay's host records (issue 31 §2): the task's outcomes per host. Absent: nothing recorded. */
  readonly hosts?: Pick<HostRecords, 'record'>;
  /** Where the `host.avoided` event and a failure to record a host outcome are logged (recording never fails the step). */
  readonly log?: {
    info(message: string, detail: Record<string, unknown>): void;
    warn(message: string, detail: Record<string, unknown>): void;
  };
}

/**
 * Records what the task saw on its hosts (issue 31 §2), once: by the step that delivered the result.
 * A host whose failed starts reach HOST_AVOID_AFTER_FAILURES is announced in chat
 * (`host.avoided {server_id, reason, until}`). Best effort: a failing write is logged, never retried.
 */
export const recordHostOutcomes = async (
  state: WorkflowState,
  deps: Pick<ReportResultDeps, 'hosts' | 'notifier' | 'log'>,
  now: number,
): Promise<HostAvoided[]> => {
  const avoided: HostAvoided[] = [];
  if (!deps.hosts) return avoided;
  for (const { server_id, outcome } of outcomesOfTask(state)) {
    try {
      const started = await deps.hosts.record(server_id, outcome, now, keyNameOf(state.origin.caller));
      if (started)
        avoided.push({
          server_id,
          reason: started.reason,
          until: started.until,
          ...(started.key !== undefined ? { key: started.key } : {}),
        });
    } catch (error) {
      deps.log?.warn('host outcome not recorded', { server_id, outcome: outcome.kind, error });
    }
  }
  for (const line of avoided) {
    deps.log?.info('host.avoided', { ...line });
    await deps.notifier.chat(hostAvoidedText(line));
  }
  return avoided;
};

/**
 * The spending side of a task's end (issue 24). A ready order: its readiness is recorded on the
 * reservation (time held counts from there; the fleet watch settles when the order ends). A failure:
 * the reservation is settled now: to nothing when no order was placed (all released), else from the
 * placement to now (an order that never became ready was cancelled by CancelOrder or the safety net).
 */
export const settleTaskSpend = async (
  state: Pick<WorkflowState, 'task_id' | 'placement' | 'check'>,
  spend: Pick<SpendStore, 'started' | 'settle'>,
  success: boolean,
  now: number,
): Promise<Settlement | undefined> => {
  const placement = state.placement && !state.placement.retry ? state.placement : undefined;
  if (success) {
    const readyAt = readyAtSeconds(state as WorkflowState);
    if (placement && readyAt !== undefined)
      await spend.started(state.task_id, { order_id: placement.order_id, started_at: readyAt });
    return undefined;
  }
  if (placement)
    await spend.started(state.task_id, {
      order_id: placement.order_id,
      started_at: Math.floor(placement.placed_at / 1000),
    });
  return spend.settle(state.task_id, { ended_at: Math.floor(now / 1000) }, Math.floor(now / 1000));
};

/**
 * Ends the task with its one result: records a ready order with the fleet watch (with its lease,
 * when the request has one), records the result, delivers the callback (only the winner of the final
 * write delivers), announces a ready order in chat and releases the server claim. Delivery failures
 * are the notifier's to log; they never fail the task.
 *
 * The order is recorded BEFORE the final write: a failing lease write fails the step, the state
 * machine retries it, and no result says "ready" about an order nobody guards. `track` is
 * idempotent (a retried step changes nothing), and the lease end is counted from `check.ready_at`,
 * so every attempt computes the same `lease_expires_at`.
 */
export const reportResult = async (
  state: WorkflowState,
  deps: ReportResultDeps,
  now: number,
): Promise<{
  readonly success: boolean;
  readonly delivered: boolean;
  readonly result: TaskResult;
  readonly settled?: Settlement;
}> => {
  const result = workflowResult(state);
  // Before the final write, like the lease: a failing write fails the step, which is retried (both are idempotent).
  const settled = deps.spend ? await settleTaskSpend(state, deps.spend, result.success, now) : undefined;
  // Caller URLs are not in the workflow input (execution history): they are read from the task record.
  const { callbackUrl, eventsUrl, origin } = deliveryTargets(await deps.tasks.get(state.task_id), state.origin);
  // A replacement round (issue 23): the fleet watch tracks its order under the replaced task and reports it.
  if (result.success && !state.replaces) {
    const { max_hours: maxHours, use_spot: spot, on_outbid: onOutbid, max_price: maxPrice } = state.request;
    await deps.leases.track(
      {
        order_id: result.order_id,
        task_id: state.task_id,
        // Where the fleet watch sends the order's lifecycle events (the result goes to callbackUrl below).
        ...(eventsUrl !== undefined ? { callback_url: eventsUrl } : {}),
        spot,
        ...(state.origin.caller ? { key: state.origin.caller.key } : {}),
        // Outbid recovery (issue 23): the fleet watch acts on what the request asked for.
        ...(onOutbid !== undefined
          ? { on_outbid: onOutbid, ...(maxPrice !== undefined ? { max_price: maxPrice } : {}) }
          : {}),
      },
      {
        now: Math.floor(now / 1000),
        status: result.status,
        ...(result.lease_expires_at !== undefined && maxHours !== undefined
          ? { lease: { expires_at: result.lease_expires_at, hours: maxHours } }
          : {}),
      },
    );
  }
  // The signed callback carries the Jupyter token (issue 37 §3); the stored result never does.
  const token =
    result.success && result.access?.jupyter && callbackUrl !== undefined
      ? (await deps.tasks.orderAccess?.(state.task_id))?.jupyter_token
      : undefined;
  const signed =
    result.success && token !== undefined ? { ...result, access: withJupyterToken(result.access, token) } : result;
  const delivered = await completeTask(
    deps,
    { task_id: state.task_id, origin, callback_url: callbackUrl },
    result,
    now,
    // One execution per task (named by it), its states in sequence: this step is the only finisher by
    // this name, and a Step Functions retry of it after a final write whose answer was lost still delivers.
    REPORT_RESULT_FINISHER,
    signed,
  );
  if (delivered && result.success && !state.replaces) await deps.notifier.chat(orderReadyText(result));
  if (delivered) await recordHostOutcomes(state, deps, now);
  if (state.search) await deps.claims.release(state.search.server.id, state.task_id);
  return { success: result.success, delivered, result, ...(settled ? { settled } : {}) };
};
