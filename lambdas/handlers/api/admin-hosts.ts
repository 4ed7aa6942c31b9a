/**
 * The operator's host avoidance (issue 31 §2), scope `admin`, signature v2: POST
 * /admin/hosts/{server_id}/avoid (`hours`, default HOST_AVOID_HOURS; `reason`, default `operator`)
 * and POST /admin/hosts/{server_id}/clear (ends every avoidance, relay-wide and per key, and forgets
 * the failed starts counted towards the next one). Each answers the host's record as GET /webhook/hosts
 * lists it to the default key. Clearing a host the relay has no record of answers 404 and creates none
 * (issue 38).
 */
import { hostRecordsFromEnv } from '../../adapters/from-env';
import { logger } from '../../adapters/observability';
import { hostAvoidedText } from '../../domain/requests/chat-messages';
import { hostView, type HostRecords } from '../../domain/hosts/host-records';
import type { Notifier } from '../../domain/ports';
import { AvoidHostBodySchema } from '../../http/admin-bodies/hosts';
import { parseBody } from '../../http/request-fields';
import { httpError, jsonResponse, type ApiResult, type RelayEvent } from '../../middleware/http';
import { apiHandler, type ApiHandler, type ChainDeps } from './chain';
import { signedRouteDepsFromEnv } from './deps';

export interface AdminHostsDeps extends ChainDeps {
  readonly hosts: Pick<HostRecords, 'setAvoidance' | 'clear'>;
  /** Where `host.avoided` is announced. Absent: the log only. */
  readonly chat?: Pick<Notifier, 'chat'>['chat'];
}

/** The server id of the path, or a 400. */
const serverIdOf = (event: RelayEvent, action: 'avoid' | 'clear'): number => {
  const raw =
    event.pathParameters?.server_id ?? new RegExp(`^/admin/hosts/([^/]+)/${action}$`).exec(event.rawPath ?? '')?.[1];
  const id = raw !== undefined && /^\d{1,15}$/.test(raw) ? Number(raw) : undefined;
  if (id === undefined || !Number.isSafeInteger(id) || id <= 0)
    throw httpError(400, 'server_id must be a positive integer');
  return id;
};

const avoidHost = async (event: RelayEvent, deps: AdminHostsDeps): Promise<ApiResult> => {
  const serverId = serverIdOf(event, 'avoid');
  const parsed = parseBody(AvoidHostBodySchema, event.jsonBody ?? {});
  if (!parsed.ok) throw httpError(400, parsed.error);
  const now = (deps.now ?? Date.now)();
  const hours = parsed.value.hours ?? deps.env.HOST_AVOID_HOURS;
  const avoided = {
    until: Math.floor(now / 1000) + Math.round(hours * 3600),
    reason: parsed.value.reason ?? 'operator',
    by: 'operator' as const,
  };
  const record = await deps.hosts.setAvoidance(serverId, avoided, now);
  const line = { server_id: serverId, reason: avoided.reason, until: avoided.until };
  logger.info('host.avoided', line);
  await deps.chat?.(hostAvoidedText(line));
  return jsonResponse(200, hostView(record, now), { 'Cache-Control': 'no-store' });
};

const clearHost = async (event: RelayEvent, deps: AdminHostsDeps): Promise<ApiResult> => {
  const serverId = serverIdOf(event, 'clear');
  const now = (deps.now ?? Date.now)();
  const record = await deps.hosts.clear(serverId, now);
  if (!record) throw httpError(404, `no record of host ${serverId}`);
  logger.info('host avoidance cleared', { server_id: serverId });
  return jsonResponse(200, hostView(record, now), { 'Cache-Control': 'no-store' });
};

export const createAdminHostsAvoidHandler = (deps: () => AdminHostsDeps): ApiHandler =>
  apiHandler({ routeId: 'AdminHostsAvoid', deps, json: true }, avoidHost);
export const createAdminHostsClearHandler = (deps: () => AdminHostsDeps): ApiHandler =>
  apiHandler({ routeId: 'AdminHostsClear', deps, json: true }, clearHost);

export const adminHostsDepsFromEnv = (): (() => AdminHostsDeps) =>
  signedRouteDepsFromEnv((env) => ({ hosts: hostRecordsFromEnv(env) }));
