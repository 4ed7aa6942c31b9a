/**
 * The fleet watch (issue 14): invoked by the EventBridge schedule every WATCH_INTERVAL_SECONDS (and by
 * the local runtime's timer), it runs one sweep (domain/leases/fleet-watch.ts `sweepFleet`): due leases are
 * warned or cancelled once, and one my_orders read through the shared read cache covers every watched
 * order's status. The SweepReport becomes metrics and one log line.
 *
 * A business outcome (a cancel the marketplace refused, an event nobody received) never throws: it is
 * counted (LeaseCancelFailures is alarmed) and retried or dropped by the domain rules. An
 * infrastructure failure (the table or my_orders unreadable) throws, after counting WatchErrors.
 */
import {
  sweepFleet,
  DEFAULT_SWEEP_LIMIT,
  type FleetWatchDeps,
  type SweepReport,
} from '../../domain/leases/fleet-watch';
import { awsCallGiveUpMs, documentClient } from '../../adapters/aws-clients';
import { DynamoDbLeaseStore } from '../../adapters/dynamodb/dynamodb-lease-store';
import { keyCheckOf } from '../../domain/teams/caller-keys';
import { replacementEnvSealerFromEnv } from '../../adapters/caller-key-sealer';
import { relayEnv, type RelayEnv } from '../../adapters/env';
import { callbackWorstCaseMs, chatWorstCaseMs } from '../../adapters/notifier-limits';
import { budgetedHandler, remainingMs, type BudgetContext } from '../../adapters/invocation-budget';
import { DynamoDbAvoidedHosts } from '../../adapters/dynamodb/dynamodb-avoided-hosts';
import { DynamoDbPlacementIntents } from '../../adapters/dynamodb/dynamodb-placement-intents';
import { DynamoDbServerClaims } from '../../adapters/dynamodb/dynamodb-server-claims';
import { DynamoDbTaskRepository } from '../../adapters/dynamodb/dynamodb-task-repository';
import { DynamoDbWaitingTasks } from '../../adapters/dynamodb/dynamodb-waiting-tasks';
import { lazyWorkflowStarterFromEnv } from '../../adapters/lazy-workflow-starter';
import {
  lazyCallerKeyListFromEnv,
  lazyHostRecordsFromEnv,
  lazyNotifierFromEnv,
  lazyReplacer,
  lazySpendStoreFromEnv,
} from './lazy-deps';
import { SOFT_TIME_LIMIT_SECONDS } from '../../../contract/limits';
import { lazy } from '../../adapters/lazy';
import { MARKETPLACE_CLIENT_LIMITS, marketplaceFromEnv } from '../../adapters/marketplace-from-env';
import {
  countMetric,
  invocationHandler,
  logger,
  MetricName,
  MetricUnit,
  publishMetrics,
  spendMetric,
} from '../../adapters/observability';

/** Allowance per table write or read, SDK retries included (the time-budget test's figure). */
const AWS_CALL_MS = 1_000;
/** Beyond the pacing slot, what one expiring lease costs on a healthy path: 4 writes, a chat post, an event. */
export const HEALTHY_LEASE_EXTRA_MS = 1_000;
/** Kept for publishing the report and the log line after the last lease. */
export const FINISH_RESERVE_MS = 2_000;

type TimingEnv = Pick<RelayEnv, 'MARKETPLACE_TIMEOUT_MS' | 'MARKETPLACE_MIN_INTERVAL_MS'>;

/**
 * One expiring lease at its worst, without any budget: cancel_order with every code-5 retry and
 * back-off (each attempt: pacing slot, the gate's 2 writes, the full timeout), the chat post, the
 * event with every retry, and 4 table calls (claim, end, unwatch, event claim), one of all these
 * table calls hung until the SDK gives up (awsCallGiveUpMs): the last lease a sweep starts still
 * leaves FINISH_RESERVE_MS when an AWS call hangs in it.
 */
export const leaseWorstCaseMs = (env: TimingEnv): number => {
  const limits = MARKETPLACE_CLIENT_LIMITS;
  let backoffs = 0;
  for (let n = 0; n < limits.maxRateLimitRetries; n += 1)
    backoffs += Math.min(limits.maxBackoffMs, limits.baseBackoffMs * 2 ** n);
  const attempt = env.MARKETPLACE_MIN_INTERVAL_MS + 100 + 2 * AWS_CALL_MS + env.MARKETPLACE_TIMEOUT_MS;
  const cancel = (1 + limits.maxRateLimitRetries) * attempt + backoffs;
  const oneHungCallMs = awsCallGiveUpMs() - AWS_CALL_MS;
  return cancel + chatWorstCaseMs() + callbackWorstCaseMs() + 4 * AWS_CALL_MS + oneHungCallMs;
};

/**
 * Leases per sweep: as many as a healthy sweep handles in two thirds of the invocation's time at the
 * paced rate (cancels are spaced MARKETPLACE_MIN_INTERVAL_MS apart), at most DEFAULT_SWEEP_LIMIT.
 * 300 s and 1 req/s: 100.
 */
export const sweepLimit = (budgetMs: number, minIntervalMs: number): number => {
  const perLease = minIntervalMs + HEALTHY_LEASE_EXTRA_MS;
  if (!Number.isFinite(budgetMs)) return DEFAULT_SWEEP_LIMIT;
  return Math.max(1, Math.min(DEFAULT_SWEEP_LIMIT, Math.floor((budgetMs * 2) / 3 / perLease)));
};

export interface WatchSettings extends TimingEnv {
  readonly LEASE_WARNING_SECONDS: number;
  /** @default 60 */
  readonly ORDER_VISIBLE_TIMEOUT_SECONDS?: number;
}

const REPORT_METRICS: readonly (readonly [string, keyof Omit<SweepReport, 'cancelFailures' | 'settlements'>])[] = [
  [MetricName.LeasesDue, 'due'],
  [MetricName.LeaseWarnings, 'warned'],
  [MetricName.LeasesCancelled, 'cancelled'],
  [MetricName.OrphanOrdersCancelled, 'orphansCancelled'],
  [MetricName.LeaseCancelFailures, 'failedCancels'],
  [MetricName.OrderStatusChanges, 'statusChanges'],
  [MetricName.LifecycleEvents, 'eventsSent'],
  [MetricName.LifecycleEventFailures, 'eventsFailed'],
  [MetricName.WatchTableReads, 'tableReads'],
  [MetricName.WatchMarketplaceCalls, 'marketplaceCalls'],
  [MetricName.WatchDeferred, 'deferred'],
  [MetricName.WaitingTasks, 'waitingTasks'],
  [MetricName.WaitingTasksResumed, 'waitingResumed'],
  [MetricName.WaitingTasksExpired, 'waitingExpired'],
  [MetricName.WaitingSlotsRepaired, 'waitingSlotsRepaired'],
];

/** One EMF blob per sweep, zeros included (an alarm on LeaseCancelFailures sees 0, not missing data). */
const publish = (report: SweepReport): void => {
  publishMetrics(REPORT_METRICS.map(([name, key]) => ({ name, unit: MetricUnit.Count, value: report[key] })));
  for (const settled of report.settlements ?? []) spendMetric('SpendSettledUsd', settled.key, settled.cost_usd);
};

/** Builds the handler around its dependencies and settings (tests pass fakes and a clock). */
export const createFleetWatchHandler = (
  deps: () => FleetWatchDeps | Promise<FleetWatchDeps>,
  settings: () => WatchSettings,
  clock: () => number = () => Math.floor(Date.now() / 1000),
) =>
  async function fleetWatch(_event: unknown, _context?: BudgetContext): Promise<SweepReport> {
    const s = settings();
    const reserveMs = leaseWorstCaseMs(s) + FINISH_RESERVE_MS;
    let report: SweepReport;
    try {
      report = await sweepFleet(await deps(), {
        now: clock(),
        warningSeconds: s.LEASE_WARNING_SECONDS,
        ...(s.ORDER_VISIBLE_TIMEOUT_SECONDS !== undefined
          ? { visibleTimeoutSeconds: s.ORDER_VISIBLE_TIMEOUT_SECONDS }
          : {}),
        limit: sweepLimit(remainingMs(), s.MARKETPLACE_MIN_INTERVAL_MS),
        softLimitSeconds: SOFT_TIME_LIMIT_SECONDS,
        // A lease is started only if its worst case still fits: the rest waits for the next sweep.
        canContinue: () => remainingMs() > reserveMs,
      });
    } catch (error) {
      countMetric(MetricName.WatchErrors);
      logger.error('fleet watch sweep failed', { error });
      throw error;
    }
    publish(report);
    const { cancelFailures, settlements, ...counts } = report;
    if (settlements?.length) logger.info('orders settled', { settlements });
    if (cancelFailures.length > 0)
      logger.warn('lease cancellations failed; retried on the next sweep', { cancelFailures });
    logger.info('fleet watch sweep', counts);
    return report;
  };

// Issue 40 §1: what a sweep uses only when something happens is loaded then (./lazy-deps.ts): the
// ledger (an order ended, a rebid's raise), the host records (an outbid), the caller keys (a standing
// order or a replacement round to start), the notifier (a warning, an expiry, a status change), the
// replacer and the workflow starter. from-env.ts is not imported here
// for that reason: the adapters every sweep uses are built directly, as from-env.ts builds them.
const deps = lazy<FleetWatchDeps>(() => {
  const env = relayEnv();
  const doc = documentClient();
  const notifier = lazyNotifierFromEnv(env);
  const marketplace = marketplaceFromEnv(env);
  const tasks = new DynamoDbTaskRepository(doc, env.TABLE_NAME, replacementEnvSealerFromEnv(env));
  const leases = new DynamoDbLeaseStore(doc, env.TABLE_NAME);
  const spend = lazySpendStoreFromEnv(env);
  // Issue 29 §4: a revoked or expired key's waiting tasks fail and its replacement rounds stop.
  const keys = keyCheckOf(lazyCallerKeyListFromEnv(env));
  // Issue 31 §2: outbids are counted per host (standing-order sweeps read the avoided hosts only).
  const hosts = lazyHostRecordsFromEnv(env);
  const workflow = env.STATE_MACHINE_ARN ? lazyWorkflowStarterFromEnv(env) : undefined;
  // Outbid recovery (issue 23): replacing starts a create-order workflow round (STATE_MACHINE_ARN set).
  const replacer = workflow
    ? lazyReplacer(
        env,
        {
          tasks,
          workflow,
          leases,
          marketplace,
          notifier,
          events: notifier,
          spend,
          keys,
        },
        {
          poll_interval_seconds: env.ORDER_POLL_INTERVAL_SECONDS,
          ready_timeout_seconds: env.ORDER_READY_TIMEOUT_SECONDS,
          soft_limit_seconds: SOFT_TIME_LIMIT_SECONDS,
        },
      )
    : undefined;
  return {
    leases,
    marketplace,
    notifier,
    events: notifier,
    intents: new DynamoDbPlacementIntents(doc, env.TABLE_NAME),
    tasks,
    // Spending (issue 24): ended orders are settled.
    spend,
    // Outbid recovery (issue 23): rebidding here; replacing through the replacer.
    recovery: {
      marketplace,
      history: (taskId, entry) => tasks.appendHistory?.(taskId, entry, Date.now()) ?? Promise.resolve(),
      ...(replacer ? { replacer } : {}),
      hosts,
      // A rebid's raises are reserved first (issue 29 §3), reported like a create's reservations.
      spend: {
        store: spend,
        ...(env.SPEND_LIMIT_USD_PER_DAY !== undefined ? { limitUsdPerDay: env.SPEND_LIMIT_USD_PER_DAY } : {}),
        onReserved: (usd, usedToday, key) => spendMetric('SpendReservedUsd', key, usd, usedToday),
        clock: () => Date.now() / 1000,
      },
    },
    // Standing orders (issue 23): served when the watch may start workflows (STATE_MACHINE_ARN set).
    ...(workflow
      ? {
          standing: {
            waiting: new DynamoDbWaitingTasks(doc, env.TABLE_NAME),
            keys,
            marketplace,
            claims: new DynamoDbServerClaims(doc, env.TABLE_NAME),
            tasks,
            notifier,
            workflow,
            hosts: new DynamoDbAvoidedHosts(doc, env.TABLE_NAME),
          },
        }
      : {}),
  };
});

export const handler = budgetedHandler(
  invocationHandler(
    createFleetWatchHandler(
      async () => deps(),
      () => relayEnv(),
    ),
  ),
);
