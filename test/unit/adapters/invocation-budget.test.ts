import middy from '@middy/core';
import type { Context } from 'aws-lambda';
import {
  budgetedHandler,
  invocationBudget,
  remainingMs,
  withInvocationBudget,
  withReserve,
} from '../../../lambdas/adapters/invocation-budget';

/** A Lambda context whose remaining time is read from a fake clock. */
const contextWith = (remaining: () => number): Context =>
  ({ getRemainingTimeInMillis: remaining }) as unknown as Context;

describe('Adapter: invocation budget', () => {
  it('is unbounded outside an invocation', () => {
    expect(remainingMs()).toBe(Number.POSITIVE_INFINITY);
  });

  it('reads the remaining time of the invocation it runs in, through awaits', async () => {
    // Prepare
    let left = 30_000;
    const handler = budgetedHandler(async (_event: unknown, _context: Context) => {
      const before = remainingMs();
      await new Promise((resolve) => setImmediate(resolve));
      left -= 4_000;
      return [before, remainingMs()];
    });
    // Act
    const seen = await handler(
      {},
      contextWith(() => left),
    );
    // Assess
    expect(seen).toEqual([30_000, 26_000]);
    expect(remainingMs()).toBe(Number.POSITIVE_INFINITY);
  });

  it('keeps concurrent invocations apart (the local runtime runs them in one process)', async () => {
    // Prepare
    const gate = Promise.resolve();
    const read = budgetedHandler(async (_event: unknown, _context: Context) => {
      await gate;
      await new Promise((resolve) => setTimeout(resolve, 5));
      return remainingMs();
    });
    // Act
    const [a, b] = await Promise.all([
      read(
        {},
        contextWith(() => 1_000),
      ),
      read(
        {},
        contextWith(() => 9_000),
      ),
    ]);
    // Assess
    expect([a, b]).toEqual([1_000, 9_000]);
  });

  it('holds a reserve back inside withReserve, and never reports below 0', async () => {
    // Act
    const seen = await withInvocationBudget(
      contextWith(() => 20_000),
      async () => [
        await withReserve(15_000, async () => remainingMs()),
        await withReserve(25_000, async () => remainingMs()),
        remainingMs(),
      ],
    );
    // Assess
    expect(seen).toEqual([5_000, 0, 20_000]);
  });

  it('records the context in a middy chain for the handler', async () => {
    // Prepare
    const handler = middy<unknown, number>({ timeoutEarlyInMillis: 0 })
      .use(invocationBudget())
      .handler(async () => remainingMs());
    // Act
    const seen = await handler(
      {},
      contextWith(() => 12_345),
    );
    // Assess
    expect(seen).toBe(12_345);
  });
});
