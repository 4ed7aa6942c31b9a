/**
 * The workflow starter (the Step Functions client and all) loaded on first use (lazyPort; issue 40
 * §1), for the functions that start workflows only on a rare path: the job worker (a price alert that
 * fires) and the fleet watch (a replacement round, a standing order resumed). Their handlers do not
 * import from-env.ts (whose static import of the starter would put it back in every cold start).
 */
import type { WorkflowStarter } from '../domain/ports';
import type { RelayEnv } from './env';
import { lazyPort } from './lazy-port';

/**
 * The workflow starter (the Step Functions client and all), on first use; STATE_MACHINE_ARN is
 * checked now, as workflowStarterFromEnv checks it, so a miswired function still fails when built.
 */
export const lazyWorkflowStarterFromEnv = (env: RelayEnv): WorkflowStarter => {
  const stateMachineArn = env.STATE_MACHINE_ARN;
  if (!stateMachineArn) throw new Error('STATE_MACHINE_ARN is not set: cannot start the create-order workflow');
  return lazyPort<WorkflowStarter, 'start'>(async () => {
    const [{ SfnWorkflowStarter }, { sfnClient }] = await Promise.all([
      import('./sfn-workflow-starter'),
      import('./sfn-client'),
    ]);
    return new SfnWorkflowStarter(sfnClient(), stateMachineArn);
  }, ['start']);
};
