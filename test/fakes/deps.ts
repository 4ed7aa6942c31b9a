/** Ready-made dependency sets of fakes: an accepting API handler's, and the jobs'. */
import type { JobConfig, JobDeps } from '../../lambdas/domain/requests/jobs';
import { apiEnv, SECRET } from './env';
import { FakeIdempotencyStore } from './idempotency';
import { FakeQueue } from './job-queue';
import { FakeLeaseStore } from './lease-store';
import { FakeMarketplace } from './marketplace';
import { FakeNotifier } from './notifier';
import { FakeSlidingWindow } from './sliding-window';
import { FakeTasks } from './tasks';
import { FakeWorkflow } from './workflow-starter';

/** Every fake an accepting handler needs, with a fixed clock and sequential task ids. */
export const acceptFakes = (envOverrides: Record<string, string> = {}) => {
  let n = 0;
  const fakes = {
    env: apiEnv(envOverrides),
    window: new FakeSlidingWindow(),
    tasks: new FakeTasks(),
    workflow: new FakeWorkflow(),
    queue: new FakeQueue(),
    idempotency: new FakeIdempotencyStore(),
    signedRequests: new FakeIdempotencyStore(),
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
    signedRequests: fakes.signedRequests,
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

export const jobConfig: JobConfig = {
  defaultCurrency: 'NATIVE-Blockchain',
  defaultPorts: { '22': 'tcp', '8888': 'http' },
  pollIntervalSeconds: 5,
  readyTimeoutSeconds: 120,
};

/** The jobs' dependencies. The marketplace does not interleave (the worker tests use fake timers), create orders nor change its orders; tasks never seen by ingress still finish. */
export const jobFakes = () => {
  const marketplace = new FakeMarketplace({ interleave: false, createsOrders: false, fixedOrders: true });
  const tasks = new FakeTasks({ finishUnknown: true });
  const notifier = new FakeNotifier();
  const workflow = new FakeWorkflow();
  const leases = new FakeLeaseStore();
  const deps: JobDeps = { marketplace, tasks, notifier, workflow, leases, config: jobConfig };
  return { marketplace, tasks, notifier, workflow, leases, deps };
};
