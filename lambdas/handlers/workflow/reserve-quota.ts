/** ReserveQuota: reserves the order's spending (issue 24), then counts it against MAX_ORDERS_PER_HOUR (rolling hour, account-wide). */
import { logger, spendMetric } from '../../adapters/observability';
import { budgetedHandler } from '../../adapters/invocation-budget';
import { reserveQuotaOrWait, type HeldResult, type WaitForQuotaDeps } from '../../domain/create-order/wait-for-quota';
import { keys } from '../../../contract/resources';
import type { MarketplaceFees } from '../../domain/teams/spend-budget';
import { reserveQuotaDeps } from './deps';
import { workflowTask } from './shared';

export interface ReserveQuotaHandlerDeps extends WaitForQuotaDeps {
  readonly maxOrdersPerHour: number;
  /** SPEND_LIMIT_USD_PER_DAY; undefined = no relay-wide limit. */
  readonly spendLimitUsdPerDay?: number;
  /** RENTER_FEE_PERCENT and ORDER_CREATION_FEE_USD (issue 29 §3). Absent: no fees. */
  readonly fees?: MarketplaceFees;
}

/** Builds the task handler around its dependencies (tests pass fakes). */
export const createReserveQuotaStepHandler = workflowTask(
  async (state, d: ReserveQuotaHandlerDeps, now): Promise<{ count: number } | HeldResult> => {
    const outcome = await reserveQuotaOrWait(state, d, {
      now,
      limit: d.maxOrdersPerHour,
      key: keys.quota(),
      keyQuota: keys.keyQuota,
      ...(d.spendLimitUsdPerDay !== undefined ? { spendLimitUsdPerDay: d.spendLimitUsdPerDay } : {}),
      ...(d.fees ? { fees: d.fees } : {}),
    });
    if ('waiting' in outcome) {
      logger.info('standing order refused for now, waits again', {
        held_until: outcome.held_until,
        held_by: outcome.held_by,
      });
      return outcome;
    }
    if (outcome.reserved)
      spendMetric('SpendReservedUsd', outcome.reserved.key, outcome.reserved.usd, outcome.reserved.used_today);
    return { count: outcome.count };
  },
);

export const handler = budgetedHandler(createReserveQuotaStepHandler(reserveQuotaDeps));
