/** ReserveQuota: reserves the order's spending (issue 24), then counts it against MAX_ORDERS_PER_HOUR (rolling hour, account-wide). */
import { spendMetric, tracedHandler } from '../../adapters/observability';
import { budgetedHandler } from '../../adapters/invocation-budget';
import { reserveQuota, type ReserveQuotaDeps } from '../../domain/create-order/reserve-quota';
import { keys } from '../../../contract/resources';
import { reserveQuotaDeps } from './deps';
import { parseWorkflowState, systemClock, type Clock } from './shared';

export interface ReserveQuotaHandlerDeps extends ReserveQuotaDeps {
  readonly maxOrdersPerHour: number;
  /** SPEND_LIMIT_USD_PER_DAY; undefined = no relay-wide limit. */
  readonly spendLimitUsdPerDay?: number;
}

/** Builds the task handler around its dependencies (tests pass fakes). */
export const createReserveQuotaStepHandler = (deps: () => ReserveQuotaHandlerDeps | Promise<ReserveQuotaHandlerDeps>, clock: Clock = systemClock) =>
  async function reserveQuotaTask(input: unknown): Promise<{ count: number }> {
    const state = parseWorkflowState(input);
    const d = await deps();
    const { count, reserved } = await reserveQuota(state, d, {
      now: clock(), limit: d.maxOrdersPerHour, key: keys.quota(), keyQuota: keys.keyQuota,
      ...(d.spendLimitUsdPerDay !== undefined ? { spendLimitUsdPerDay: d.spendLimitUsdPerDay } : {}),
    });
    if (reserved) spendMetric('SpendReservedUsd', reserved.key, reserved.usd, reserved.used_today);
    return { count };
  };

export const handler = budgetedHandler(tracedHandler(createReserveQuotaStepHandler(reserveQuotaDeps)));
