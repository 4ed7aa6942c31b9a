/**
 * The current invocation's time budget: how long until Lambda stops it. Clients (the marketplace
 * client, the notifier) read `remainingMs()` and give up early instead of outliving the function,
 * so a handler always has time left to record the outcome.
 *
 * Kept per invocation in AsyncLocalStorage, not in a module variable: the local runtime runs many
 * invocations of one handler at once in one process, each with its own deadline.
 */
import { AsyncLocalStorage } from 'node:async_hooks';
import type middy from '@middy/core';

/** The one thing we need from a Lambda context. */
export interface BudgetContext {
  getRemainingTimeInMillis(): number;
}

interface Budget {
  /** Remaining ms of the invocation, already reduced by the reserves of enclosing `withReserve` scopes. */
  readonly remaining: () => number;
}

const budgets = new AsyncLocalStorage<Budget>();

const fromContext = (context: BudgetContext | undefined): Budget | undefined =>
  context && typeof context.getRemainingTimeInMillis === 'function'
    ? { remaining: () => context.getRemainingTimeInMillis() }
    : undefined;

/**
 * Milliseconds left in the current invocation (minus any reserve set aside by `withReserve`), never
 * below 0. Infinity outside an invocation (tests that call use cases directly, scripts).
 */
export const remainingMs = (): number => {
  const budget = budgets.getStore();
  return budget ? Math.max(0, budget.remaining()) : Number.POSITIVE_INFINITY;
};

/** Runs `work` with `context`'s deadline as the budget. A context without the method leaves it unbounded. */
export const withInvocationBudget = <R>(context: BudgetContext | undefined, work: () => Promise<R>): Promise<R> => {
  const budget = fromContext(context);
  return budget ? budgets.run(budget, work) : work();
};

/**
 * Runs `work` with `reserveMs` held back for what comes after it: inside, `remainingMs()` is that
 * much smaller, so a client in `work` gives up early enough for the rest of the invocation (e.g. the
 * safety net's cancel leaves the callback its full budget). Outside an invocation it changes nothing.
 */
export const withReserve = <R>(reserveMs: number, work: () => Promise<R>): Promise<R> => {
  const outer = budgets.getStore();
  if (!outer) return work();
  return budgets.run({ remaining: () => outer.remaining() - reserveMs }, work);
};

/**
 * Wraps a plain Lambda handler (Step Functions tasks, the SQS worker, the safety net): the
 * invocation's context becomes the budget for everything the handler awaits.
 */
export const budgetedHandler =
  <E, C extends BudgetContext | undefined, R>(handler: (event: E, context: C) => Promise<R>) =>
  (event: E, context: C): Promise<R> =>
    withInvocationBudget(context, () => handler(event, context));

/**
 * Middy middleware: records the invocation's context as the budget for the middlewares after it.
 * Use it first in the chain. An `enterWith` from a middleware does not always reach the handler
 * (observed in the API chain), so wrap the handler itself with `withInvocationBudget` too.
 */
export const invocationBudget = (): middy.MiddlewareObj => ({
  before: (request) => {
    const budget = fromContext(request.context as BudgetContext | undefined);
    // A fresh store per invocation, even without a context: a warm container never reuses the last one.
    budgets.enterWith(budget ?? { remaining: () => Number.POSITIVE_INFINITY });
  },
});
