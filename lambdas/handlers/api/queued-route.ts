/**
 * The accept routes that queue a job (SQS): cancel-order, extend-order, set-spot-price, cancel-task,
 * price-alert and status. A module of their own, so that create-order (which starts the workflow
 * instead) never imports the queue's hand-off.
 */
import type { TaskKind } from '../../domain/task';
import type { AcceptDeps } from './accept-deps';
import { acceptRoute, type AcceptBodySchema, type AcceptRouteSpec } from './accept-route';
import type { ApiHandler } from './chain';
import { jobQueueFromEnv } from './deps';

/**
 * A queued route's handler builder: `spec` with the job queue as its hand-off. Tests inject deps;
 * without, the route's production wiring.
 */
export const queuedRoute =
  <K extends TaskKind, S extends AcceptBodySchema>(spec: Omit<AcceptRouteSpec<K, S>, 'handOff'>) =>
  (deps?: () => AcceptDeps): ApiHandler =>
    acceptRoute({ ...spec, handOff: { queue: jobQueueFromEnv } }, deps);
