/** FindServer: picks and claims a server for the task (see ./workflow-state.ts for the workflow). */
import { NoServerAvailableError, SoftTimeoutError } from '../errors';
import { serverFitsLease } from '../lease';
import { findMatchingServers, noMatchMessage } from '../matching';
import type { MarketplaceClient, ServerClaims, TaskRepository } from '../ports';
import { spotBidFor } from '../spot-bid';
import { triedServersText } from './place-order';
import { CLAIM_TTL_SECONDS, softDeadlinePassed, type SearchResult, type WorkflowState } from './workflow-state';

export interface FindServerDeps {
  readonly marketplace: Pick<MarketplaceClient, 'listServers'>;
  readonly claims: ServerClaims;
  readonly tasks: Pick<TaskRepository, 'update'>;
}

/**
 * Picks the first matching server no other task holds, and claims it for this task. Servers a
 * previous attempt was rejected on are excluded. Throws NoServerAvailableError (business failure)
 * or SoftTimeoutError.
 */
export const findServer = async (state: WorkflowState, deps: FindServerDeps, now: number): Promise<SearchResult> => {
  if (softDeadlinePassed(state, now)) throw new SoftTimeoutError();
  const excluded = [...(state.search?.excluded ?? [])];
  const tried = [...(state.search?.tried ?? [])];
  if (state.placement?.retry && !excluded.includes(state.placement.server_id)) {
    excluded.push(state.placement.server_id);
    tried.push({ server_id: state.placement.server_id, reason: state.placement.reason });
  }
  const attempt = (state.search?.attempt ?? 0) + 1;
  await deps.tasks.update(state.task_id, { state: 'running' }, now);

  const { request } = state;
  const servers = await deps.marketplace.listServers();
  const matching = findMatchingServers(servers, {
    gpu_type: request.gpu_type,
    max_price: request.max_price,
    currency: request.currency,
    use_spot: request.use_spot,
    exclude: excluded,
  });
  // A leased order needs a server that may be rented that long (`mrl`, hours).
  const candidates = matching.filter((server) => serverFitsLease(server, request.max_hours));
  for (const server of candidates) {
    // A claim is a conditional write: a server another running task holds is skipped, so
    // "first match" means the first match nobody else is about to rent.
    if (await deps.claims.claim(server.id, state.task_id, now, CLAIM_TTL_SECONDS)) {
      const bid = request.use_spot ? spotBidFor(server, request.currency) : undefined;
      return {
        server: {
          id: server.id,
          gpu_array: [...server.gpu_array],
          price_usd: typeof server.price.usd.spot === 'number' ? server.price.usd.spot : null,
          ...(bid !== undefined ? { spot_bid: bid } : {}),
        },
        attempt,
        excluded,
        ...(tried.length ? { tried } : {}),
      };
    }
  }
  // After refusals the failure names each server tried and why (issue 20, item 2).
  throw new NoServerAvailableError(triedServersText(noMatchMessage(request.gpu_type, request.max_price), tried));
};
