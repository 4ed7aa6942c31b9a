/**
 * Every function's worst case fits its Lambda timeout (issue 13, item 2). The worst cases are summed
 * from the constants the code uses: the notifier's timeouts, attempts and back-off, the deployed
 * marketplace client's timeout, retries, back-off and pacing, and the number of AWS calls each
 * handler makes. Run with PRINT_BUDGETS=1 to print the table (docs/operations.md "Time budgets").
 *
 * "Without a budget" is the sum if every attempt waits for its full timeout. Where that does not fit
 * (the marketplace summary behind API Gateway), the bound is the client's own: it gives up before the
 * invocation's remaining time falls under its reserve, and that is checked here too.
 *
 * On top of that healthy sum, each function must leave room for one hung AWS call (a stalled
 * endpoint, a half-open connection), which the clients' timeouts now bound (AWS_HUNG_CALL_MS, from
 * lambdas/adapters/aws-clients.ts). The API routes too (25 s): a stalled hand-off must end in the
 * route's own undo and 503, not in a Lambda timeout that leaves a queued task with nothing behind it.
 */
import type { Context } from 'aws-lambda';
import { testEnv } from '../fakes/env';
import { callbackWorstCaseMs, chatWorstCaseMs, NOTIFIER_DEFAULTS } from '../../lambdas/adapters/http-notifier';
import { withInvocationBudget } from '../../lambdas/adapters/invocation-budget';
import {
  MARKETPLACE_ANSWER_RESERVE_MS,
  MARKETPLACE_CLIENT_LIMITS,
  marketplaceRemainingMs,
} from '../../lambdas/adapters/marketplace-from-env';
import { SSH_PROBE_TIMEOUT_MS } from '../../lambdas/adapters/ssh-banner-probe';
import { REPORT_RESERVE_MS } from '../../lambdas/handlers/workflow/execution-ended';
import { SOFT_TIME_LIMIT_SECONDS } from '../../contract/limits';
import { WORKFLOW_FUNCTION_TIMEOUT_SECONDS } from '../../lib/constructs/order-workflow';
import { API_GATEWAY_TIMEOUT_SECONDS, routeTimeoutSeconds } from '../../lib/constructs/webhook-api';
import { WATCH_TIMEOUT_SECONDS, WORKER_TIMEOUT_SECONDS } from '../../contract/resources';
import {
  FINISH_RESERVE_MS,
  HEALTHY_LEASE_EXTRA_MS,
  leaseWorstCaseMs,
  sweepLimit,
} from '../../lambdas/handlers/watch/fleet-watch';
import { ROUTES } from '../../contract/routes';
import { SETTINGS } from '../../contract/settings';
import { AWS_CLIENT_TIMEOUTS, awsCallGiveUpMs } from '../../lambdas/adapters/aws-clients';
import { MAXIMUM_RETRY_DELAY, Retry } from '@smithy/core/retry';

/**
 * Allowance per AWS SDK call (DynamoDB item, Secrets Manager, SQS, Step Functions) including the
 * SDK's own retries on a healthy service. The one assumed figure here: the rest is the code's.
 */
const AWS_CALL_MS = 1_000;

const aws = AWS_CLIENT_TIMEOUTS;
/** The SDK's longest back-off before each retry of a transient error (random × min(base × 2^n, cap)). */
const awsBackoffMs = Array.from({ length: aws.maxAttempts - 1 }, (_, n) =>
  Math.min(Retry.delay() * 2 ** n, MAXIMUM_RETRY_DELAY),
).reduce((sum, ms) => sum + ms, 0);
/**
 * One hung AWS call at its worst, from the clients' own timeouts: every attempt gets its response
 * headers just before the request timeout, then its body stalls until the socket idle timeout, then
 * the SDK backs off and retries on a new connection. Not "connection + request timeout": the request
 * timer starts with the attempt, so the connect phase runs inside it. 3 × (2 + 2) s + 0.15 s = 12.15 s.
 */
const AWS_HUNG_CALL_MS =
  aws.maxAttempts * (Math.max(aws.connectionTimeoutMs, aws.requestTimeoutMs) + aws.socketTimeoutMs) + awsBackoffMs;
/** The usual hang, no answer at all (a dead keep-alive socket, a black hole): 3 × 2 s + 0.15 s = 6.15 s. */
const AWS_UNANSWERED_CALL_MS = aws.maxAttempts * Math.max(aws.connectionTimeoutMs, aws.requestTimeoutMs) + awsBackoffMs;
/** The pacing gate's lateness margin at its cap (http-marketplace-client: minIntervalMs / 10 within [5, 100]). */
const PACING_LATENESS_MS = 100;

const env = testEnv();
const limits = MARKETPLACE_CLIENT_LIMITS;

const backoffsMs = (retries: number): number => {
  let total = 0;
  for (let n = 0; n < retries; n += 1) total += Math.min(limits.maxBackoffMs, limits.baseBackoffMs * 2 ** n);
  return total;
};
/** One attempt: its pacing slot (plus the gate's 2 DynamoDB calls) and the full timeout. */
const attemptMs = (slotMs: number): number =>
  slotMs + PACING_LATENESS_MS + 2 * AWS_CALL_MS + env.MARKETPLACE_TIMEOUT_MS;
/** A read (my_orders, listing): network and code-5 retries, and the shared read cache (get + put). */
const marketplaceGetMs =
  (1 + limits.maxNetworkRetries + limits.maxRateLimitRetries) * attemptMs(env.MARKETPLACE_MIN_INTERVAL_MS) +
  backoffsMs(limits.maxNetworkRetries) +
  backoffsMs(limits.maxRateLimitRetries) +
  2 * AWS_CALL_MS;
/** cancel_order: never re-sent after a network failure, only after code 5. */
const marketplacePostMs =
  (1 + limits.maxRateLimitRetries) * attemptMs(env.MARKETPLACE_MIN_INTERVAL_MS) +
  backoffsMs(limits.maxRateLimitRetries);
/** create_order: as cancel_order, in its own slower pacing lane. */
const createOrderMs =
  (1 + limits.maxRateLimitRetries) *
    attemptMs(Math.max(env.MARKETPLACE_MIN_INTERVAL_MS, env.MARKETPLACE_CREATE_INTERVAL_MS)) +
  backoffsMs(limits.maxRateLimitRetries);
/** The longest visibility wait a PlaceOrder may do for one intent (ORDER_VISIBLE_TIMEOUT_SECONDS at its maximum). */
const visibleWindowMs = SETTINGS.orderVisibleTimeoutSeconds.max.value * 1_000;
const callbackMs = callbackWorstCaseMs();
const chatMs = chatWorstCaseMs();
/** completeTask: the final write, then the callback and the Slack response_url reply in parallel. */
const completeTaskMs = AWS_CALL_MS + Math.max(callbackMs, NOTIFIER_DEFAULTS.chatTimeoutMs);
/** Fleet watch, before any lease: 3 secrets, the due query (cursor, buckets, leases, cursor advance), the watch item, my_orders, the changed orders' records. */
const watchFixedMs = marketplaceGetMs + 9 * AWS_CALL_MS;
/** One expiring lease: claim, cancel_order, end, unwatch, chat, event claim, event. A status change costs less (chat + event + 2 writes). */
const watchLeaseMs = marketplacePostMs + chatMs + callbackMs + 4 * AWS_CALL_MS;

interface Budget {
  readonly fn: string;
  readonly timeoutS: number;
  /** Sum of every step at its worst, without any budget. */
  readonly worstMs: number;
  readonly parts: string;
}

const workflow = (fn: keyof typeof WORKFLOW_FUNCTION_TIMEOUT_SECONDS, worstMs: number, parts: string): Budget => ({
  fn,
  timeoutS: WORKFLOW_FUNCTION_TIMEOUT_SECONDS[fn],
  worstMs,
  parts,
});

const BUDGETS: readonly Budget[] = [
  // secret + task update + listing + up to 3 claims
  workflow('FindServer', marketplaceGetMs + 5 * AWS_CALL_MS, 'listing GET + 5 AWS calls'),
  workflow('ReserveQuota', 3 * AWS_CALL_MS, '3 AWS calls'),
  // secret, task get, an earlier intent's visibility wait (its window, then one more GET), 2 intent writes, create_order,
  // this create's visibility wait (window + GET), 2 owner claims, result write, intent close, claim release
  workflow(
    'PlaceOrder',
    2 * (visibleWindowMs + marketplaceGetMs) + createOrderMs + 10 * AWS_CALL_MS,
    '2 × (visibility window + my_orders GET) + create_order + 10 AWS calls',
  ),
  // my_orders, then the ssh banner probe of a running order (READINESS_PROBE=ssh; DNS, connect and banner under one timeout)
  workflow(
    'CheckOrder',
    marketplaceGetMs + AWS_CALL_MS + SSH_PROBE_TIMEOUT_MS,
    'my_orders GET + 1 AWS call + ssh probe 3 s',
  ),
  // secret, task get, reconcile GET, order write, cancel_order, cancelled write
  workflow(
    'CancelOrder',
    marketplaceGetMs + marketplacePostMs + 4 * AWS_CALL_MS,
    'my_orders GET + cancel_order + 4 AWS calls',
  ),
  // 2 secrets, final write + callback ∥ Slack reply + delivered mark, chat (Slack ∥ Discord with retry_after), claim release
  workflow(
    'ReportResult',
    3 * AWS_CALL_MS + completeTaskMs + AWS_CALL_MS + chatMs + AWS_CALL_MS,
    'callback 3 × 10 s + back-off, chat 5 s + Discord wait + 5 s, 5 AWS calls',
  ),
  // 3 secrets, task get, cancel (task get, GET, write, cancel_order, write), complete, claim release
  workflow(
    'ExecutionEnded',
    5 * AWS_CALL_MS + marketplaceGetMs + marketplacePostMs + 2 * AWS_CALL_MS + completeTaskMs + AWS_CALL_MS,
    'my_orders GET + cancel_order + callback + 8 AWS calls',
  ),
  {
    fn: 'JobWorker',
    timeoutS: WORKER_TIMEOUT_SECONDS,
    // The job runs under its soft limit; after it: visibility / state writes and the result's delivery.
    worstMs: 2 * AWS_CALL_MS + SOFT_TIME_LIMIT_SECONDS * 1_000 + completeTaskMs + AWS_CALL_MS,
    parts: 'soft limit 300 s + result delivery + 3 AWS calls',
  },
  {
    fn: 'FleetWatch',
    timeoutS: WATCH_TIMEOUT_SECONDS,
    // The handler starts a lease (or status change) only while its worst case still fits, so the worst
    // case is the fixed part, then one lease started just before the guard closes, then the report.
    worstMs: watchFixedMs + watchLeaseMs + FINISH_RESERVE_MS,
    parts: 'my_orders GET + 9 AWS calls, then leases while one more fits (cancel_order + chat + event + 4 AWS calls)',
  },
  ...ROUTES.filter((r) => !r.permissions.includes('marketplace')).map((route): Budget => ({
    fn: `Api${route.id}`,
    timeoutS: routeTimeoutSeconds(route),
    // Rate-limit window (get + write), a secret, idempotency (get + put), task record, StartExecution or SendMessage.
    worstMs: 7 * AWS_CALL_MS,
    parts: 'at most 7 AWS calls',
  })),
];

describe('Time budgets', () => {
  if (process.env.PRINT_BUDGETS) {
    const seconds = (ms: number) => `${(ms / 1000).toFixed(1)} s`;
    console.log(
      `one hung AWS call: ${seconds(AWS_HUNG_CALL_MS)} at worst, ${seconds(AWS_UNANSWERED_CALL_MS)} unanswered\n${BUDGETS.map(
        (b) =>
          `| ${b.fn} | ${b.timeoutS} s | ${seconds(b.worstMs)} | ${seconds(b.worstMs + AWS_HUNG_CALL_MS)} | ${b.parts} |`,
      ).join('\n')}`,
    );
  }

  it.each(BUDGETS.map((b) => [b.fn, b] as const))(
    '%s: the worst case without a budget fits the timeout',
    (_fn, budget) => {
      expect(budget.worstMs).toBeLessThan(budget.timeoutS * 1_000);
    },
  );

  it("a hung AWS call is bounded by the clients' timeouts, as aws-clients computes it (the fleet watch's lease guard uses it)", () => {
    expect(awsCallGiveUpMs()).toBe(AWS_HUNG_CALL_MS);
    expect(AWS_HUNG_CALL_MS).toBeLessThan(15_000);
  });

  it.each(BUDGETS.map((b) => [b.fn, b] as const))(
    '%s: the timeout leaves room for one hung AWS call on top of the worst case',
    (_fn, budget) => {
      expect(budget.worstMs + AWS_HUNG_CALL_MS).toBeLessThan(budget.timeoutS * 1_000);
    },
  );

  it('every API route times out before API Gateway does, so its own answer (202, or the undo and 503) reaches the caller', () => {
    for (const route of ROUTES) expect(routeTimeoutSeconds(route)).toBeLessThan(API_GATEWAY_TIMEOUT_SECONDS);
  });

  it('ReportResult ends well inside its timeout even if every delivery hangs (no Lambda timeout after the final write)', () => {
    const reportResult = BUDGETS.find((b) => b.fn === 'ReportResult')!;
    // Margin for a cold start and the Secrets Manager fetches on top of the sum.
    expect(reportResult.timeoutS * 1_000 - reportResult.worstMs).toBeGreaterThanOrEqual(20_000);
  });

  it('ExecutionEnded keeps the failure report its whole budget, whatever the cancel costs', () => {
    // The cancel runs with REPORT_RESERVE_MS held back: the client gives up before it eats into the report.
    expect(REPORT_RESERVE_MS).toBeGreaterThanOrEqual(completeTaskMs + AWS_CALL_MS + NOTIFIER_DEFAULTS.reserveMs);
    expect(WORKFLOW_FUNCTION_TIMEOUT_SECONDS.ExecutionEnded * 1_000).toBeGreaterThan(
      REPORT_RESERVE_MS + marketplaceGetMs + marketplacePostMs,
    );
  });

  describe('FleetWatch', () => {
    it('starts a lease only while its worst case fits: the guard covers every step of one, one hung AWS call among them', () => {
      expect(leaseWorstCaseMs(env)).toBeGreaterThanOrEqual(watchLeaseMs - AWS_CALL_MS + AWS_HUNG_CALL_MS);
    });

    it('handles its sweep limit at the paced rate in two thirds of the timeout on a healthy path', () => {
      const limit = sweepLimit(WATCH_TIMEOUT_SECONDS * 1_000, env.MARKETPLACE_MIN_INTERVAL_MS);
      expect(limit).toBe(100);
      expect(limit * (env.MARKETPLACE_MIN_INTERVAL_MS + HEALTHY_LEASE_EXTRA_MS)).toBeLessThanOrEqual(
        (WATCH_TIMEOUT_SECONDS * 1_000 * 2) / 3,
      );
    });
  });

  describe('MarketplaceSummary (behind API Gateway)', () => {
    const route = ROUTES.find((r) => r.id === 'MarketplaceSummary')!;

    it('times out before API Gateway does, so its own JSON answer can reach the caller', () => {
      expect(routeTimeoutSeconds(route)).toBeLessThan(API_GATEWAY_TIMEOUT_SECONDS);
    });

    // The client budget bounds marketplace time only: its AWS calls (rate limit, secret, pacing gate,
    // read cache) are not cut by it, so like the other routes it has no guaranteed room for a hung one.
    it('has a listing whose unbudgeted worst case would not fit: the client budget is what bounds it', () => {
      expect(marketplaceGetMs).toBeGreaterThan(routeTimeoutSeconds(route) * 1_000);
    });

    it("hands the client the invocation's remaining time minus the time to answer", async () => {
      // Prepare
      const context = { getRemainingTimeInMillis: () => routeTimeoutSeconds(route) * 1_000 } as unknown as Context;
      // Act
      const seen = await withInvocationBudget(context, async () => marketplaceRemainingMs());
      // Assess
      expect(seen).toBe(routeTimeoutSeconds(route) * 1_000 - MARKETPLACE_ANSWER_RESERVE_MS);
      expect(marketplaceRemainingMs()).toBe(Number.POSITIVE_INFINITY);
    });
  });
});
