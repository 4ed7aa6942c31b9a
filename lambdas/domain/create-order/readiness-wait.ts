/** The readiness wait: CheckOrder's one poll, whether a placed order is ready (the WaitForReady loop around it is in lib/constructs/order-workflow.ts; see ./workflow-state.ts). */
import { MarketplaceInvalidInputError } from '../errors';
import type { MarketplaceClient, SshProbe, SshProbeFailure } from '../ports';
import { parseSshEndpoint } from '../ssh-endpoint';
import { softDeadlinePassed, type CheckResult, type ReadinessPending, type WorkflowState } from './workflow-state';

export interface CheckOrderDeps {
  readonly marketplace: Pick<MarketplaceClient, 'listOrders'>;
  /** READINESS_PROBE=ssh: a running order is ready only once its ssh endpoint answers. Absent = the marketplace status alone. */
  readonly sshProbe?: SshProbe;
}

type SshVerdict =
  | { readonly ready: true }
  | { readonly ready: false; readonly pending: ReadinessPending; readonly ssh_probe?: SshProbeFailure };

/** Whether the running order's ssh endpoint answers (production shows orders `online` while ssh is refused for minutes). */
const sshVerdict = async (probe: SshProbe, sshConnection: string | null): Promise<SshVerdict> => {
  const endpoint = parseSshEndpoint(sshConnection);
  if (!endpoint) return { ready: false, pending: 'ssh_endpoint_unknown' };
  const result = await probe.probe(endpoint);
  if (result.answered) return { ready: true };
  if (result.reason === 'address_refused') return { ready: false, pending: 'ssh_address_refused' };
  return { ready: false, pending: 'ssh_not_answering', ssh_probe: result.reason };
};

/**
 * One readiness poll: ready when my_orders shows the order `running` and, with an ssh probe, its ssh
 * endpoint answers with a banner; a probe that fails means "not yet" (the next poll tries again).
 * Timed out past the readiness window or the soft deadline; `pending` then says what was missing.
 */
export const checkOrder = async (state: WorkflowState, deps: CheckOrderDeps, now: number): Promise<CheckResult> => {
  const placement = state.placement;
  if (!placement || placement.retry)
    throw new MarketplaceInvalidInputError('CheckOrder needs a placed order ($.placement)');
  const orders = await deps.marketplace.listOrders();
  const order = orders.find((o) => o.order_id === placement.order_id);
  const summary = order
    ? { order_id: order.order_id, status: order.status, ssh_connection: order.connection?.ssh ?? null }
    : undefined;
  const running = summary?.status === 'running';
  const ssh: SshVerdict | undefined =
    running && deps.sshProbe ? await sshVerdict(deps.sshProbe, summary.ssh_connection) : undefined;
  if (running && (!ssh || ssh.ready)) return { ready: true, timedOut: false, order: summary, ready_at: now };
  const readyTimeout = now > placement.placed_at + state.timing.ready_timeout_seconds * 1000;
  const soft = softDeadlinePassed(state, now);
  const reason = readyTimeout ? 'ready_timeout' : soft ? 'soft_deadline' : undefined;
  const waiting =
    ssh && !ssh.ready ? { pending: ssh.pending, ...(ssh.ssh_probe ? { ssh_probe: ssh.ssh_probe } : {}) } : {};
  return {
    ready: false,
    timedOut: reason !== undefined,
    ...(reason ? { reason } : {}),
    ...waiting,
    ...(summary ? { order: summary } : {}),
  };
};
