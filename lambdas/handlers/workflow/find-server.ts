/** FindServer: first matching server nobody else holds, claimed for this task. */
import { findServerOrWait, type FindServerDeps, type WaitingResult } from '../../domain/create-order/find-server';
import type { SearchResult } from '../../domain/create-order/workflow-state';
import { logger } from '../../adapters/observability';
import { budgetedHandler } from '../../adapters/invocation-budget';
import { findServerDeps } from './deps';
import { workflowTask } from './shared';

/** Builds the task handler around its dependencies (tests pass fakes). */
export const createFindServerStepHandler = workflowTask(
  async (state, deps: FindServerDeps, now): Promise<SearchResult | WaitingResult> => {
    const search = await findServerOrWait(state, deps, now);
    if ('waiting' in search) {
      logger.info('standing order waits for a server', { waiting_until: search.waiting_until });
      return search;
    }
    logger.info('server chosen', { server_id: search.server.id, attempt: search.attempt, excluded: search.excluded });
    return search;
  },
);

export const handler = budgetedHandler(createFindServerStepHandler(findServerDeps));
