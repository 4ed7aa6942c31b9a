/**
 * The notifier budgets from the invocation's remaining time: a fake clock advances by each POST's
 * timeout (a receiver that hangs) and each back-off, so the tests check what was tried and when it
 * stopped, never wall-clock time.
 */
import {
  callbackWorstCaseMs,
  chatWorstCaseMs,
  HttpNotifier,
  NOTIFIER_DEFAULTS,
} from '../../../lambdas/adapters/http-notifier';
import type { PostResponse, Transport } from '../../../lambdas/adapters/http-post';
import { DeliveryTimeoutError } from '../../../lambdas/domain/errors';
import * as observability from '../../../lambdas/adapters/observability';

// The metric functions as writable properties, so the tests can spy on them (a transpiler's CommonJS
// exports may be read-only getters).
jest.mock('../../../lambdas/adapters/observability', () => {
  const actual = jest.requireActual<typeof observability>('../../../lambdas/adapters/observability');
  return { __esModule: true, ...actual, countMetric: actual.countMetric, publishMetrics: actual.publishMetrics };
});
import type { TaskResult } from '../../../lambdas/domain/task';

const result: TaskResult = { success: true, order_id: 42, status: 'cancelled' };

/** A fake clock, a transport that hangs until each POST's timeout, and the notifier under a budget of `budgetMs`. */
const setup = (budgetMs: number | undefined, answer?: (url: string) => PostResponse | undefined) => {
  let clock = 0;
  const posts: { url: string; timeoutMs: number; at: number }[] = [];
  const transport: Transport = async (url, options) => {
    posts.push({ url, timeoutMs: options.timeoutMs, at: clock });
    const res = answer?.(url);
    if (res) return res;
    // Hangs until the timeout; the clock moves after a tick, so parallel posts (Slack and Discord) start together.
    await new Promise((resolve) => setImmediate(resolve));
    clock += options.timeoutMs;
    throw new DeliveryTimeoutError(options.timeoutMs);
  };
  const notifier = new HttpNotifier({
    signingSecrets: async () => [`whsec_${Buffer.alloc(32, 7).toString('base64')}`],
    chat: async () => ({ slack: 'https://chat.example/slack', discord: 'https://chat.example/discord' }),
    allowPrivate: true,
    transport,
    sleep: async (ms) => {
      clock += ms;
    },
    now: () => 1_750_000_000_000 + clock,
    ...(budgetMs === undefined ? {} : { remainingMs: () => budgetMs - clock }),
  });
  return { notifier, posts, clock: () => clock };
};

describe('Adapter: HttpNotifier time budget', () => {
  beforeEach(() => {
    for (const level of ['debug', 'info', 'warn', 'error'] as const)
      jest.spyOn(observability.logger, level).mockImplementation(() => undefined);
    jest.spyOn(observability, 'countMetric').mockImplementation(() => undefined);
  });
  afterEach(() => jest.restoreAllMocks());

  it('without a budget, tries a hanging receiver 3 times for 10 s with 1 s and 2 s back-off (its worst case)', async () => {
    // Prepare
    const { notifier, posts, clock } = setup(undefined);
    // Act
    const delivered = await notifier.callback('https://cb.example/hook', 't-1', result);
    // Assess
    expect(delivered).toBe(false);
    expect(posts.map((p) => p.timeoutMs)).toEqual([10_000, 10_000, 10_000]);
    expect(clock()).toBe(callbackWorstCaseMs());
    expect(callbackWorstCaseMs()).toBe(33_000);
  });

  it.each([8_000, 12_000, 20_000, 40_000])(
    "with %i ms left, a callback stops before the reserve and a chat post's time are reached",
    async (budget) => {
      // Prepare
      const { notifier, posts, clock } = setup(budget);
      const limit = budget - NOTIFIER_DEFAULTS.reserveMs - NOTIFIER_DEFAULTS.chatTimeoutMs;
      // Act
      await notifier.callback('https://cb.example/hook', 't-1', result);
      // Assess: the handler keeps its reserve to record the outcome, and time to announce it.
      expect(clock()).toBeLessThanOrEqual(limit);
      expect(posts.length).toBeGreaterThanOrEqual(1);
      for (const post of posts) expect(post.at + post.timeoutMs).toBeLessThanOrEqual(limit);
    },
  );

  it('cuts the last attempt to what is left instead of skipping it', async () => {
    // Prepare: 20 s left − 2 s reserve − 5 s for the chat → 10 s, 1 s back-off, then 2 s.
    const { notifier, posts } = setup(20_000);
    // Act
    await notifier.callback('https://cb.example/hook', 't-1', result);
    // Assess
    expect(posts.map((p) => p.timeoutMs)).toEqual([10_000, 2_000]);
  });

  it('leaves the chat announcement its time after a callback to a hanging receiver', async () => {
    // Prepare
    const { notifier, posts, clock } = setup(20_000);
    // Act
    await notifier.callback('https://cb.example/hook', 't-1', result);
    const afterCallback = clock();
    await notifier.chat('ready');
    // Assess: both chat posts were sent with their full 5 s.
    expect(posts.filter((p) => p.at >= afterCallback).map((p) => p.timeoutMs)).toEqual([5_000, 5_000]);
  });

  it('sends nothing when the invocation has no time left for a POST', async () => {
    // Prepare
    const { notifier, posts } = setup(NOTIFIER_DEFAULTS.reserveMs + NOTIFIER_DEFAULTS.minAttemptMs - 1);
    // Act
    const delivered = await notifier.callback('https://cb.example/hook', 't-1', result);
    await notifier.chat('ready');
    // Assess
    expect(delivered).toBe(false);
    expect(posts).toEqual([]);
  });

  it('caps chat posts to the budget and skips a Discord retry_after wait that would not fit', async () => {
    // Prepare: 6.5 s left → 4.5 s budget. Discord answers 429 with retry_after 4.2 s (under the 5 s
    // cap), which would leave no time for the second post.
    const discord429: PostResponse = { status: 429, headers: {}, text: () => JSON.stringify({ retry_after: 4.2 }) };
    const { notifier, posts } = setup(6_500, (url) => (url.endsWith('/discord') ? discord429 : undefined));
    // Act
    await notifier.chat('ready');
    // Assess: one post each, cut to 4.5 s, and no second Discord post.
    expect(posts.map((p) => [p.url.split('/').pop(), p.timeoutMs])).toEqual([
      ['slack', 4_500],
      ['discord', 4_500],
    ]);
  });

  it('waits for Discord retry_after when the budget allows it (worst case: post, wait, post)', async () => {
    // Prepare
    const discord429: PostResponse = { status: 429, headers: {}, text: () => JSON.stringify({ retry_after: 5 }) };
    const { notifier, posts } = setup(undefined, (url) => (url.endsWith('/discord') ? discord429 : undefined));
    // Act
    await notifier.chat('ready');
    // Assess
    expect(posts.filter((p) => p.url.endsWith('/discord'))).toHaveLength(2);
    expect(chatWorstCaseMs()).toBe(15_000);
  });
});
