/** CheckOrder: one readiness poll of my_orders (and, with READINESS_PROBE=ssh, of the order's ssh endpoint); the state machine waits and loops. */
import { checkOrder, type CheckOrderDeps } from '../../domain/create-order/readiness-wait';
import type { CheckResult } from '../../domain/create-order/workflow-state';
import { logger } from '../../adapters/observability';
import { budgetedHandler } from '../../adapters/invocation-budget';
import { checkOrderDeps } from './deps';
import { relayEnv } from '../../adapters/env';
import { lazy } from '../../adapters/lazy';
import { sshLoginProbe } from '../../adapters/ssh-login-probe';
import { workflowTask } from './shared';

/** Builds the task handler around its dependencies (tests pass fakes). */
export const createCheckOrderStepHandler = workflowTask(
  async (state, deps: CheckOrderDeps, now): Promise<CheckResult> => {
    const check = await checkOrder(state, deps, now);
    if (check.timedOut)
      logger.warn('order not ready in time', {
        reason: check.reason,
        status: check.order?.status,
        pending: check.pending,
        ssh_probe: check.ssh_probe,
      });
    else if (check.pending)
      logger.info('order running, not ready yet', {
        order_id: check.order?.order_id,
        pending: check.pending,
        ssh_probe: check.ssh_probe,
      });
    return check;
  },
);

/** READINESS_PROBE=ssh-login: ssh2's client, imported here only (the other functions' bundles stay without it). */
const loginProbe = lazy(() => sshLoginProbe({ allowPrivate: relayEnv().ALLOW_PRIVATE_SSH_PROBE }));

export const handler = budgetedHandler(createCheckOrderStepHandler(() => checkOrderDeps(loginProbe)));
