/** ReserveQuota: reserves the order's spending and counts it against the hourly cap (see ./workflow-state.ts for the workflow). */
import { keyNameOf, seesAllOrders } from '../teams/caller-keys';
import { BudgetExceededError, InvalidOrderRequestError } from '../errors';
import type { SlidingWindow } from '../ports';
import {
  budgetApplies,
  budgetExceededText,
  MAX_HOURS_REQUIRED,
  type MarketplaceFees,
  type SpendStore,
} from '../teams/spend-budget';
import { countAgainstHourlyCap } from './hourly-cap';
import type { WorkflowState } from './workflow-state';

export interface ReserveQuotaDeps {
  readonly quota: SlidingWindow;
  /** Spending budgets and the ledger (issue 24). Absent: nothing is reserved. */
  readonly spend?: Pick<SpendStore, 'reserve'>;
}

/** What a reservation took, for the SpendReservedUsd metric. */
export interface Reserved {
  readonly key: string;
  readonly usd: number;
  /** The relay's used total of the day after this reservation. */
  readonly used_today?: number;
}

/**
 * Reserves the order's worst case (issue 24): the chosen server's USD per hour × the lease hours,
 * against SPEND_LIMIT_USD_PER_DAY and the caller key's budget, today (UTC). Without a budget the
 * reservation is still made (no limit), so the ledger records every order; without a lease it
 * reserves nothing and is settled to the actual cost. Throws BudgetExceededError over a budget, and
 * InvalidOrderRequestError under one when the order has no lease or its server states no USD price.
 */
const reserveSpend = async (
  state: WorkflowState,
  spend: Pick<SpendStore, 'reserve'>,
  relayLimit: number | undefined,
  now: number,
  fees: MarketplaceFees | undefined,
): Promise<Reserved | undefined> => {
  const server = state.search?.server;
  if (!server) return undefined;
  const caller = state.origin.caller;
  const budgeted = budgetApplies(relayLimit, caller);
  const hours = state.request.max_hours;
  if (budgeted && hours === undefined) throw new InvalidOrderRequestError(MAX_HOURS_REQUIRED);
  // The order's own USD price only (on-demand: the on-demand one), never the spot price for an on-demand order (issue 29 §3).
  const usdPerHour = server.usd_per_hour;
  if (budgeted && usdPerHour === undefined)
    throw new InvalidOrderRequestError(`server ${server.id} states no USD price; no order is placed under a budget`);
  const key = keyNameOf(caller);
  const outcome = await spend.reserve(
    {
      task_id: state.task_id,
      key,
      server_id: server.id,
      gpu: server.gpu_array[0] ?? '',
      gpus: server.gpu_array.length,
      usd_per_hour: usdPerHour ?? 0,
      hours: hours ?? 0,
      ...(fees ? { fees } : {}),
      ...(server.usd_per_coin !== undefined ? { usd_per_coin: server.usd_per_coin } : {}),
      ...(caller?.budget_usd_per_day !== undefined ? { key_budget_usd_per_day: caller.budget_usd_per_day } : {}),
    },
    {
      ...(relayLimit !== undefined ? { relay: relayLimit } : {}),
      ...(caller?.budget_usd_per_day !== undefined ? { key: caller.budget_usd_per_day } : {}),
    },
    Math.floor(now / 1000),
  );
  if (!outcome.ok)
    throw new BudgetExceededError(budgetExceededText(outcome.refusal, { relayWide: seesAllOrders(caller) }));
  return { key, usd: outcome.usd, ...(outcome.used_today !== undefined ? { used_today: outcome.used_today } : {}) };
};

/**
 * Reserves the order's spending (above), then counts this task's order against the account-wide
 * hourly cap. The event id is the task id, so a retried step or a second placement attempt of the
 * same task counts once. A refused budget counts no order; a refused hourly cap leaves the
 * reservation to ReportResult, which releases a failed task's.
 */
export const reserveQuota = async (
  state: WorkflowState,
  deps: ReserveQuotaDeps,
  opts: {
    readonly now: number;
    readonly limit: number;
    readonly key: string;
    readonly keyQuota?: (keyName: string) => string;
    /** SPEND_LIMIT_USD_PER_DAY. */
    readonly spendLimitUsdPerDay?: number;
    /** RENTER_FEE_PERCENT and ORDER_CREATION_FEE_USD. Absent: no fees. */
    readonly fees?: MarketplaceFees;
  },
): Promise<{ readonly count: number; readonly reserved?: Reserved }> => {
  const reserved = deps.spend
    ? await reserveSpend(state, deps.spend, opts.spendLimitUsdPerDay, opts.now, opts.fees)
    : undefined;
  const hit = await countAgainstHourlyCap(state, deps.quota, opts);
  return { count: hit.count, ...(reserved ? { reserved } : {}) };
};
