/**
 * Production wiring of the API handlers: the env contract and the adapters, built once per Lambda
 * instance on the first invocation. Tests build handlers with fakes instead (createXxxHandler).
 */
import { relayEnv, type RelayEnv } from '../../adapters/env';
import {
  callerKeyStoreFromEnv,
  idempotencyStoreFromEnv,
  signedRequestStoreFromEnv,
  slidingWindowFromEnv,
  taskRepositoryFromEnv,
  keySshKeysFromEnv,
  waitingTasksFromEnv,
} from '../../adapters/from-env';
import {
  keySealerFromEnv,
  orderAccessSealerFromEnv,
  replacementEnvSealerFromEnv,
} from '../../adapters/caller-key-sealer';
import { resolveCallerKey, type CallerKeyRecord } from '../../domain/teams/caller-keys';
import type { ResolvedKey } from '../../middleware/verify-signature';
import { marketplaceFromEnv } from '../../adapters/marketplace-from-env';
import { slackSigningSecret, webhookSecrets, type SecretReadOptions } from '../../adapters/secrets';
import type { JobQueue, MarketplaceClient, TaskRepository, WaitingTasks, WorkflowStarter } from '../../domain/ports';
import { lazy } from '../../adapters/lazy';
import { unavailablePort, type AcceptDeps } from './accept-deps';
import type { AdminKeysDeps } from './admin-keys';
import type { ChainDeps } from './chain';

/** The caller-key lookup of the signed routes (X-Webhook-Key-Id, issue 24). */
const callerKeysFromEnv = (env: RelayEnv): ((name: string) => Promise<ResolvedKey | undefined>) => {
  const store = callerKeyStoreFromEnv(env);
  const sealer = keySealerFromEnv(env);
  return (name) => resolveCallerKey({ store, sealer }, name, Math.floor(Date.now() / 1000));
};

/** What the chain of a signed route is wired with: its env, rate window, secrets, caller keys and signature claims. */
export type SignedChainDeps = ChainDeps &
  Required<Pick<ChainDeps, 'window' | 'webhookSecrets' | 'callerKeys' | 'signedRequests'>>;

/**
 * Deps of a signed route, built once per Lambda instance on the first invocation: the signed chain's,
 * and the route's own (`own`, given the env).
 */
export const signedRouteDepsFromEnv = <T extends object>(own: (env: RelayEnv) => T): (() => SignedChainDeps & T) =>
  lazy(() => {
    const env = relayEnv();
    const chain: SignedChainDeps = {
      env,
      window: slidingWindowFromEnv(env),
      webhookSecrets: (read) => webhookSecrets(env, read),
      callerKeys: callerKeysFromEnv(env),
      signedRequests: signedRequestStoreFromEnv(env),
    };
    return { ...chain, ...own(env) };
  });

/** The caller keys the Slack route maps users with (cached like the signed routes' lookups). */
const slackCallerKeysFromEnv = (env: RelayEnv): (() => Promise<readonly CallerKeyRecord[]>) => {
  const store = callerKeyStoreFromEnv(env);
  return () => store.list();
};

/** The hand-off factories a route passes to `acceptDepsFromEnv`, re-exported for the route files. */
export { jobQueueFromEnv, waitingTasksFromEnv, workflowStarterFromEnv } from '../../adapters/from-env';

/**
 * What a task-accepting route hands off to, given as the factories themselves rather than flags: a
 * route imports only the one its IAM role allows, so its bundle carries only that SDK client (the
 * Step Functions or the SQS one, ~24 KB each: BENCHMARKS.md "Cold start budget").
 */
export type HandOffs = {
  readonly queue?: (env: RelayEnv) => JobQueue;
  readonly slack?: boolean;
} & (
  | {
      readonly workflow: (env: RelayEnv) => WorkflowStarter;
      /**
       * The waiting queue: a route that starts create-orders admits standing orders under its caps
       * (issue 29 §5), so it must name it; a factory for the same reason as the others.
       */
      readonly waiting: (env: RelayEnv) => WaitingTasks;
    }
  | { readonly workflow?: undefined; readonly waiting?: undefined }
);

/**
 * Deps of a task-accepting route. Only the hand-offs the route names are built; a missing one is a
 * port that fails loudly (create-order may start executions but not send messages, and so on).
 */
export const acceptDepsFromEnv = (uses: HandOffs): (() => AcceptDeps) =>
  signedRouteDepsFromEnv((env) => ({
    ...(uses.slack
      ? {
          slackSigningSecret: (read?: SecretReadOptions) => slackSigningSecret(env, read),
          callerKeyRecords: slackCallerKeysFromEnv(env),
        }
      : {}),
    // The create-order routes keep a replaceable task's env, sealed (issue 29 §6); they and price alerts
    // seal an order's access secrets (issue 37 §3: password, Jupyter token, script).
    tasks: taskRepositoryFromEnv(
      env,
      uses.workflow ? replacementEnvSealerFromEnv(env) : undefined,
      orderAccessSealerFromEnv(env),
    ),
    idempotency: idempotencyStoreFromEnv(env),
    workflow: uses.workflow ? uses.workflow(env) : unavailablePort('the create-order workflow'),
    queue: uses.queue ? uses.queue(env) : unavailablePort('the job queue'),
    // Routes that start create-orders admit standing orders under the waiting queue's caps (issue 29 §5).
    ...(uses.waiting
      ? {
          standing: {
            waiting: uses.waiting(env),
            caps: { perKey: env.MAX_WAITING_TASKS_PER_KEY, total: env.MAX_WAITING_TASKS },
          },
        }
      : {}),
  }));

/** Deps of GET /webhook/tasks/{task_id}. */
export const taskLookupDepsFromEnv = (): (() => SignedChainDeps & {
  readonly tasks: TaskRepository;
  readonly waiting: WaitingTasks;
}) =>
  signedRouteDepsFromEnv((env) => ({
    // The task's own key sees its order's Jupyter token (issue 37 §3): opened from its seal.
    tasks: taskRepositoryFromEnv(env, undefined, orderAccessSealerFromEnv(env)),
    waiting: waitingTasksFromEnv(env),
  }));

/** Deps of the caller-key admin routes (issue 24), with each key's SSH public key (issue 37 §2). */
export const adminKeysDepsFromEnv = (): (() => AdminKeysDeps) =>
  signedRouteDepsFromEnv((env) => ({
    store: callerKeyStoreFromEnv(env),
    sealer: keySealerFromEnv(env),
    sshKeys: keySshKeysFromEnv(env),
  }));

/** Deps of GET /webhook/marketplace. */
export const marketplaceDepsFromEnv = (): (() => ChainDeps & { readonly marketplace: MarketplaceClient }) =>
  lazy(() => {
    const env = relayEnv();
    return { env, window: slidingWindowFromEnv(env), marketplace: marketplaceFromEnv(env) };
  });
