/**
 * GET /webhook/spend?from=YYYY-MM-DD&to=YYYY-MM-DD&limit=&next= (issue 24): signed (over path and
 * query), scope `read`. Per key and per UTC day: reserved (worst cases of orders still running),
 * settled (actual costs), orders settled and GPU hours. A key sees its own lines; the default key and
 * admin keys see every key's. Both dates default to today (UTC); at most MAX_SPEND_RANGE_DAYS days.
 * Paged (issue 38 §5): one answer covers at most `limit` days (1–100, default 31: one BatchGetItem),
 * `from` and `to` naming the page's; `next`, an opaque cursor, asks for the following days (sent with
 * the same `from`, `to` and `limit`).
 */
import { documentClient } from '../../adapters/aws-clients';
import { DynamoDbSpendDays } from '../../adapters/dynamodb/dynamodb-spend-days';
import { seesAllOrders, taskCallerOf } from '../../domain/teams/caller-keys';
import { utcDay } from '../../domain/teams/spend-budget';
import {
  DEFAULT_SPEND_PAGE_DAYS,
  MAX_SPEND_PAGE_DAYS,
  spendPage,
  spendRange,
  spendReport,
  type SpendDays,
} from '../../domain/teams/spend-ledger';
import { httpError, jsonResponse, type ApiResult, type RelayEvent } from '../../middleware/http';
import { apiHandler, type ApiHandler, type ChainDeps } from './chain';
import { signedRouteDepsFromEnv } from './deps';
import { decodeCursor, encodeCursor, pageLimit, queryParam } from './page-cursor';

export interface SpendDeps extends ChainDeps {
  readonly spend: SpendDays;
}

/** The first day of the page a cursor asks for. */
const cursorDay = (raw: string): string | undefined => {
  const value = decodeCursor(raw) as { day?: unknown } | undefined;
  return typeof value?.day === 'string' ? value.day : undefined;
};

const spend = async (event: RelayEvent, deps: SpendDeps): Promise<ApiResult> => {
  const range = spendRange(queryParam(event, 'from'), queryParam(event, 'to'), utcDay((deps.now ?? Date.now)()));
  if ('error' in range) throw httpError(400, range.error);
  const limit = pageLimit(queryParam(event, 'limit'), MAX_SPEND_PAGE_DAYS, DEFAULT_SPEND_PAGE_DAYS);
  if (typeof limit === 'string') throw httpError(400, limit);
  const rawNext = queryParam(event, 'next');
  const startDay = rawNext === undefined ? undefined : cursorDay(rawNext);
  const page = rawNext !== undefined && startDay === undefined ? undefined : spendPage(range.days, limit, startDay);
  if (!page) throw httpError(400, 'next must be a cursor this route answered for the same from and to');
  const caller = event.caller ? taskCallerOf(event.caller) : undefined;
  const onlyKey = seesAllOrders(caller) ? undefined : caller?.key;
  const budget = onlyKey === undefined ? deps.env.SPEND_LIMIT_USD_PER_DAY : caller?.budget_usd_per_day;
  const report = spendReport(page.days, await deps.spend.days(page.days), {
    ...(onlyKey !== undefined ? { onlyKey } : {}),
    ...(budget !== undefined ? { limitUsdPerDay: budget } : {}),
  });
  const next = page.nextDay !== undefined ? { next: encodeCursor({ day: page.nextDay }) } : {};
  return jsonResponse(200, { ...report, ...next }, { 'Cache-Control': 'no-store' });
};

/** The handler with injected deps (tests); `handler` wires the real adapters. */
export const createSpendHandler = (deps: () => SpendDeps): ApiHandler => apiHandler({ routeId: 'Spend', deps }, spend);

export const handler = createSpendHandler(
  signedRouteDepsFromEnv((env) => ({ spend: new DynamoDbSpendDays(documentClient(), env.TABLE_NAME) })),
);
