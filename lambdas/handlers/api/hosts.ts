/**
 * GET /webhook/hosts (issue 31 §2): signed, scope `read`. The relay's own record of each host it
 * placed orders on: outcomes, median time to ready, failed starts in 24 h, avoidance, and a score;
 * avoided hosts first, then the lowest scores.
 */
import { hostRecordsFromEnv } from '../../adapters/from-env';
import { hostViews, type HostRecords } from '../../domain/hosts/host-records';
import { jsonResponse, type ApiResult } from '../../middleware/http';
import { apiHandler, type ApiHandler, type ChainDeps } from './chain';
import { signedRouteDepsFromEnv } from './deps';

export interface HostsDeps extends ChainDeps {
  readonly hosts: Pick<HostRecords, 'list'>;
}

const listHosts = async (_event: unknown, deps: HostsDeps): Promise<ApiResult> => {
  const now = (deps.now ?? Date.now)();
  const hosts = hostViews(await deps.hosts.list(), now);
  return jsonResponse(
    200,
    { hosts, avoided: hosts.filter((h) => h.avoided_until !== undefined).length },
    {
      'Cache-Control': 'no-store',
    },
  );
};

/** The handler with injected deps (tests); `handler` wires the real adapters. */
export const createHostsHandler = (deps: () => HostsDeps): ApiHandler =>
  apiHandler({ routeId: 'Hosts', deps }, listHosts);

export const handler = createHostsHandler(signedRouteDepsFromEnv((env) => ({ hosts: hostRecordsFromEnv(env) })));
