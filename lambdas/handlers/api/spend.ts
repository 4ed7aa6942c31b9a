/**
 * GET /webhook/spend?from=YYYY-MM-DD&to=YYYY-MM-DD (issue 24): signed (over path and query), scope
 * `read`. Per key and per UTC day: reserved (worst cases of orders still running), settled (actual
 * costs), orders settled and GPU hours. A key sees its own lines; the default key and admin keys
 * see every key's. Both dates default to today (UTC); at most MAX_SPEND_RANGE_DAYS days.
 */
import { documentClient } from '../../adapters/aws-clients';
import { DynamoDbSpendDays } from '../../adapters/dynamodb/dynamodb-spend-days';
import { seesAllOrders, taskCallerOf } from '../../domain/teams/caller-keys';
import { utcDay } from '../../domain/teams/spend-budget';
import { spendRange, spendReport, type SpendDays } from '../../domain/teams/spend-ledger';
import { httpError, jsonResponse, type ApiResult, type RelayEvent } from '../../middleware/http';
import { apiHandler, type ApiHandler, type ChainDeps } from './chain';
import { signedRouteDepsFromEnv } from './deps';

export interface SpendDeps extends ChainDeps {
  readonly spend: SpendDays;
}

const queryParam = (event: RelayEvent, name: string): string | undefined => {
  const fromMap = event.queryStringParameters?.[name];
  if (fromMap !== undefined) return fromMap;
  return new URLSearchParams(event.rawQueryString ?? '').get(name) ?? undefined;
};

const spend = async (event: RelayEvent, deps: SpendDeps): Promise<ApiResult> => {
  const range = spendRange(queryParam(event, 'from'), queryParam(event, 'to'), utcDay((deps.now ?? Date.now)()));
  if ('error' in range) throw httpError(400, range.error);
  const caller = event.caller ? taskCallerOf(event.caller) : undefined;
  const onlyKey = seesAllOrders(caller) ? undefined : caller?.key;
  const limit = onlyKey === undefined ? deps.env.SPEND_LIMIT_USD_PER_DAY : caller?.budget_usd_per_day;
  const report = spendReport(range.days, await deps.spend.days(range.days), {
    ...(onlyKey !== undefined ? { onlyKey } : {}),
    ...(limit !== undefined ? { limitUsdPerDay: limit } : {}),
  });
  return jsonResponse(200, report, { 'Cache-Control': 'no-store' });
};

/** The handler with injected deps (tests); `handler` wires the real adapters. */
export const createSpendHandler = (deps: () => SpendDeps): ApiHandler => apiHandler({ routeId: 'Spend', deps }, spend);

export const handler = createSpendHandler(
  signedRouteDepsFromEnv((env) => ({ spend: new DynamoDbSpendDays(documentClient(), env.TABLE_NAME) })),
);
