/** The readiness wait: CheckOrder's one poll, whether a placed order is ready (the WaitForReady loop around it is in lib/constructs/order-workflow.ts; see ./workflow-state.ts). */
import { MarketplaceInvalidInputError } from '../errors';
import type { Order } from '../marketplace-types';
import type { MarketplaceClient, SshLoginProbe, SshProbe, SshProbeFailure, SshProbeResult } from '../ports';
import { parseSshEndpoint } from '../leases/ssh-endpoint';
import { softDeadlinePassed, type CheckResult, type ReadinessPending, type WorkflowState } from './workflow-state';

export interface CheckOrderDeps {
  readonly marketplace: Pick<MarketplaceClient, 'listOrders'>;
  /** READINESS_PROBE=ssh: a running order is ready only once its ssh endpoint answers. Absent = the marketplace status alone. */
  readonly sshProbe?: SshProbe;
  /**
   * READINESS_PROBE=ssh-login (issue 31 §4): ready only once a login with the order's password works.
   * `password` gets the placement's `password_key` (issue 38 §4): which relay secret version it was sent.
   */
  readonly sshLogin?: {
    readonly probe: SshLoginProbe;
    readonly password: (taskId: string, passwordKey: string | undefined) => Promise<string>;
  };
}

type SshVerdict =
  | { readonly ready: true; readonly host_key_sha256?: string; readonly host_key?: string }
  | { readonly ready: false; readonly pending: ReadinessPending; readonly ssh_probe?: SshProbeFailure };

/** Whether the running order's ssh endpoint answers (production shows orders `online` while ssh is refused for minutes). */
const sshVerdict = async (
  probe: (endpoint: NonNullable<ReturnType<typeof parseSshEndpoint>>) => Promise<SshProbeResult>,
  sshConnection: string | null,
): Promise<SshVerdict> => {
  const endpoint = parseSshEndpoint(sshConnection);
  if (!endpoint) return { ready: false, pending: 'ssh_endpoint_unknown' };
  const result = await probe(endpoint);
  if (result.answered)
    return {
      ready: true,
      ...(result.host_key_sha256 ? { host_key_sha256: result.host_key_sha256 } : {}),
      ...(result.host_key ? { host_key: result.host_key } : {}),
    };
  if (result.reason === 'address_refused') return { ready: false, pending: 'ssh_address_refused' };
  // A banner with a refused password (issue 31 §4): polled again until the readiness window ends.
  if (result.reason === 'login_refused') return { ready: false, pending: 'ssh_login_refused' };
  return { ready: false, pending: 'ssh_not_answering', ssh_probe: result.reason };
};

/**
 * The order's http mappings (issue 37 §4): container port → URL of the ports the marketplace lists
 * as http (the spec's `connection.ports` values `http://…`; production's `http_pub`, read as
 * `https://…`). Nothing when it lists none.
 */
const httpOf = (order: Order): { http?: Record<string, string> } => {
  const http = Object.fromEntries(
    Object.entries(order.connection?.ports ?? {}).filter(([, url]) => /^https?:\/\//.test(url)),
  );
  return Object.keys(http).length > 0 ? { http } : {};
};

/** The probe of this task's readiness: a login (ssh-login), a banner (ssh), or none. */
const probeOf = (deps: CheckOrderDeps, taskId: string, passwordKey: string | undefined) => {
  const login = deps.sshLogin;
  if (login)
    return async (endpoint: NonNullable<ReturnType<typeof parseSshEndpoint>>) =>
      login.probe.login(endpoint, await login.password(taskId, passwordKey));
  const banner = deps.sshProbe;
  return banner ? (endpoint: NonNullable<ReturnType<typeof parseSshEndpoint>>) => banner.probe(endpoint) : undefined;
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
    ? {
        order_id: order.order_id,
        status: order.status,
        ssh_connection: order.connection?.ssh ?? null,
        ...httpOf(order),
      }
    : undefined;
  const running = summary?.status === 'running';
  const probe = probeOf(deps, state.task_id, placement.password_key);
  const ssh: SshVerdict | undefined = running && probe ? await sshVerdict(probe, summary.ssh_connection) : undefined;
  if (running && (!ssh || ssh.ready))
    return {
      ready: true,
      timedOut: false,
      order: summary,
      ready_at: now,
      ...(ssh?.ready && ssh.host_key_sha256 ? { ssh_host_key_sha256: ssh.host_key_sha256 } : {}),
      ...(ssh?.ready && ssh.host_key ? { ssh_host_key: ssh.host_key } : {}),
    };
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
