/**
 * GET /webhook/hosts?limit=&next= (issue 31 §2; issue 38 §3, §5): signed, scope `read`. The relay's
 * own record of each host it placed orders on: outcomes, median time to ready, failed starts in 24 h,
 * avoidance, and a score; hosts avoided for the caller first, then by server id. A key that does not
 * see every order (not the default key, not `admin`) sees the relay-wide fields and its own outcomes,
 * never another key's. Paged: at most `limit` hosts (1–100, default 100) per answer, and `next`, an
 * opaque cursor, while more follow; a request reads the index item and one BatchGetItem.
 */
import { hostRecordsFromEnv } from '../../adapters/from-env';
import {
  hostViews,
  MAX_HOSTS_PAGE,
  type HostCursor,
  type HostRecords,
  type HostViewer,
} from '../../domain/hosts/host-records';
import { DEFAULT_KEY_NAME, seesAllOrders, taskCallerOf } from '../../domain/teams/caller-keys';
import { decodeCursor, encodeCursor, pageLimit, queryParam } from './page-cursor';
import { httpError, jsonResponse, type ApiResult, type RelayEvent } from '../../middleware/http';
import { apiHandler, type ApiHandler, type ChainDeps } from './chain';
import { signedRouteDepsFromEnv } from './deps';

export interface HostsDeps extends ChainDeps {
  readonly hosts: Pick<HostRecords, 'page'>;
}

const hostCursor = (value: unknown): HostCursor | undefined => {
  const v = value as Partial<HostCursor> | undefined;
  return v && typeof v.avoided === 'boolean' && typeof v.after === 'number' && Number.isSafeInteger(v.after)
    ? { avoided: v.avoided, after: v.after }
    : undefined;
};

const listHosts = async (event: RelayEvent, deps: HostsDeps): Promise<ApiResult> => {
  const now = (deps.now ?? Date.now)();
  const limit = pageLimit(queryParam(event, 'limit'), MAX_HOSTS_PAGE);
  if (typeof limit === 'string') throw httpError(400, limit);
  const rawNext = queryParam(event, 'next');
  const cursor = rawNext === undefined ? undefined : hostCursor(decodeCursor(rawNext));
  if (rawNext !== undefined && cursor === undefined) throw httpError(400, 'next must be a cursor this route answered');
  const caller = event.caller ? taskCallerOf(event.caller) : undefined;
  const viewer: HostViewer = { key: caller?.key ?? DEFAULT_KEY_NAME, sees_all: seesAllOrders(caller) };
  const page = await deps.hosts.page(viewer, now, limit, cursor);
  const hosts = hostViews(page.records, now, viewer);
  return jsonResponse(
    200,
    { hosts, avoided: page.avoided, ...(page.next ? { next: encodeCursor(page.next) } : {}) },
    { 'Cache-Control': 'no-store' },
  );
};

/** The handler with injected deps (tests); `handler` wires the real adapters. */
export const createHostsHandler = (deps: () => HostsDeps): ApiHandler =>
  apiHandler({ routeId: 'Hosts', deps }, listHosts);

export const handler = createHostsHandler(signedRouteDepsFromEnv((env) => ({ hosts: hostRecordsFromEnv(env) })));
