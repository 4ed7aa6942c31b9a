/**
 * Production wiring of the API handlers: the env contract and the adapters, built once per Lambda
 * instance on the first invocation. Tests build handlers with fakes instead (createXxxHandler).
 */
import { relayEnv } from '../../adapters/env';
import {
  idempotencyStoreFromEnv,
  jobQueueFromEnv,
  slidingWindowFromEnv,
  taskRepositoryFromEnv,
  workflowStarterFromEnv,
} from '../../adapters/from-env';
import { marketplaceFromEnv } from '../../adapters/marketplace-from-env';
import { slackSigningSecret, webhookSecrets } from '../../adapters/secrets';
import type { MarketplaceClient, TaskRepository } from '../../domain/ports';
import { lazy } from '../../adapters/lazy';
import { unavailablePort, type AcceptDeps, type ChainDeps } from './chain';

/**
 * Deps of a task-accepting route. Only the hand-off the route's IAM role allows is built; the other
 * is a port that fails loudly (create-order may start executions but not send messages, and so on).
 */
export const acceptDepsFromEnv = (uses: { readonly workflow: boolean; readonly queue: boolean; readonly slack?: boolean }): (() => AcceptDeps) =>
  lazy(() => {
    const env = relayEnv();
    return {
      env,
      window: slidingWindowFromEnv(env),
      webhookSecrets: () => webhookSecrets(env),
      ...(uses.slack ? { slackSigningSecret: () => slackSigningSecret(env) } : {}),
      tasks: taskRepositoryFromEnv(env),
      idempotency: idempotencyStoreFromEnv(env),
      workflow: uses.workflow ? workflowStarterFromEnv(env) : unavailablePort('the create-order workflow'),
      queue: uses.queue ? jobQueueFromEnv(env) : unavailablePort('the job queue'),
    };
  });

/** Deps of GET /webhook/tasks/{task_id}. */
export const taskLookupDepsFromEnv = (): (() => ChainDeps & { readonly tasks: TaskRepository }) =>
  lazy(() => {
    const env = relayEnv();
    return { env, window: slidingWindowFromEnv(env), webhookSecrets: () => webhookSecrets(env), tasks: taskRepositoryFromEnv(env) };
  });

/** Deps of GET /webhook/marketplace. */
export const marketplaceDepsFromEnv = (): (() => ChainDeps & { readonly marketplace: MarketplaceClient }) =>
  lazy(() => {
    const env = relayEnv();
    return { env, window: slidingWindowFromEnv(env), marketplace: marketplaceFromEnv(env) };
  });
