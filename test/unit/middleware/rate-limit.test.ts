import middy from '@middy/core';
import fc from 'fast-check';
import { errorHandler } from '../../../lambdas/middleware/error-handler';
import type { RelayEvent } from '../../../lambdas/middleware/http';
import { rateLimit, RATE_WINDOW_MS } from '../../../lambdas/middleware/rate-limit';
import { verifySignature } from '../../../lambdas/middleware/verify-signature';
import { apiEvent, lambdaContext } from '../../fixtures/events/api-event';
import { FakeSlidingWindow } from '../../fakes/sliding-window';
import { parseResult } from '../../helpers/parse-result';

const build = (window: FakeSlidingWindow, limit: number, clock: { now: number }) =>
  middy<RelayEvent>()
    .use(rateLimit({ window: () => window, limit, now: () => clock.now }))
    .use(errorHandler())
    .handler(async () => ({ statusCode: 204, body: '' }));

describe('Middleware: rateLimit', () => {
  it('returns 429 Rate limit exceeded with Retry-After once the limit is used up', async () => {
    // Prepare
    const window = new FakeSlidingWindow();
    const clock = { now: 1_000_000 };
    const handler = build(window, 3, clock);
    // Act
    const codes: number[] = [];
    for (let i = 0; i < 3; i += 1) {
      codes.push((await handler(apiEvent({ sourceIp: '198.51.100.1' }), lambdaContext())).statusCode);
      clock.now += 1_000;
    }
    const rejected = parseResult(await handler(apiEvent({ sourceIp: '198.51.100.1' }), lambdaContext()));
    // Assess: the first hit (t=1_000_000) leaves the window at 1_060_000; now is 1_003_000 → 57 s
    expect(codes).toEqual([204, 204, 204]);
    expect(rejected).toMatchObject({ statusCode: 429, body: { error: 'Rate limit exceeded' } });
    expect(rejected.headers['Retry-After']).toBe('57');
    expect(rejected.headers['Content-Type']).toBe('application/json');
  });

  it('rounds Retry-After up to whole seconds', async () => {
    const window = new FakeSlidingWindow();
    const clock = { now: 0 };
    const handler = build(window, 1, clock);
    await handler(apiEvent(), lambdaContext());
    clock.now = 59_500;
    expect(parseResult(await handler(apiEvent(), lambdaContext())).headers['Retry-After']).toBe('1');
  });

  it('keys the window by requestContext.http.sourceIp, never X-Forwarded-For', async () => {
    const window = new FakeSlidingWindow();
    const handler = build(window, 1, { now: 0 });
    await handler(apiEvent({ sourceIp: '192.0.2.10', headers: { 'x-forwarded-for': '1.1.1.1' } }), lambdaContext());
    // A spoofed X-Forwarded-For does not buy a fresh window.
    const spoofed = await handler(
      apiEvent({ sourceIp: '192.0.2.10', headers: { 'x-forwarded-for': '2.2.2.2' } }),
      lambdaContext(),
    );
    expect(spoofed.statusCode).toBe(429);
    expect(window.keysHit).toEqual(['RATE#192.0.2.10', 'RATE#192.0.2.10']);
    // Another address has its own window.
    expect((await handler(apiEvent({ sourceIp: '192.0.2.11' }), lambdaContext())).statusCode).toBe(204);
  });

  it('counts a retried invocation of the same request once', async () => {
    const window = new FakeSlidingWindow();
    const handler = build(window, 1, { now: 0 });
    const event = apiEvent({ requestId: 'req-1' });
    expect((await handler(event, lambdaContext())).statusCode).toBe(204);
    expect((await handler(event, lambdaContext())).statusCode).toBe(204);
    expect((await handler(apiEvent({ requestId: 'req-2' }), lambdaContext())).statusCode).toBe(429);
  });

  it('allows again once the oldest request leaves the rolling window', async () => {
    const window = new FakeSlidingWindow();
    const clock = { now: 0 };
    const handler = build(window, 1, clock);
    await handler(apiEvent(), lambdaContext());
    clock.now = RATE_WINDOW_MS - 1;
    expect((await handler(apiEvent(), lambdaContext())).statusCode).toBe(429);
    clock.now = RATE_WINDOW_MS;
    expect((await handler(apiEvent(), lambdaContext())).statusCode).toBe(204);
  });

  it('fails closed with 503 when the window store fails', async () => {
    const window = new FakeSlidingWindow();
    window.fail = new Error('ProvisionedThroughputExceeded table relay');
    const result = parseResult(await build(window, 5, { now: 0 })(apiEvent(), lambdaContext()));
    expect(result.statusCode).toBe(503);
    expect(result.body).toEqual({ error: 'Rate limiter unavailable; retry later' });
  });

  it('runs before the signature check, so failed signatures count', async () => {
    // Prepare
    const window = new FakeSlidingWindow();
    const handler = middy<RelayEvent>()
      .use(rateLimit({ window: () => window, limit: 2, now: () => 0 }))
      .use(verifySignature({ secrets: async () => ['s'] }))
      .use(errorHandler())
      .handler(async () => ({ statusCode: 204, body: '' }));
    // Act
    const first = await handler(apiEvent({ body: '{}', headers: { 'x-webhook-signature': 'bad' } }), lambdaContext());
    const second = await handler(apiEvent({ body: '{}' }), lambdaContext());
    const third = parseResult(await handler(apiEvent({ body: '{}' }), lambdaContext()));
    // Assess
    expect([first.statusCode, second.statusCode]).toEqual([401, 401]);
    expect(third).toMatchObject({ statusCode: 429, body: { error: 'Rate limit exceeded' } });
  });

  it('never admits more than the limit in any rolling 60 s window, and never refuses under it (property)', async () => {
    const request = fc.record({
      gapMs: fc.integer({ min: 0, max: 20_000 }),
      ip: fc.constantFrom('10.0.0.1', '10.0.0.2', '2001:db8::1'),
    });
    await fc.assert(
      fc.asyncProperty(
        fc.integer({ min: 1, max: 6 }),
        fc.array(request, { minLength: 1, maxLength: 80 }),
        async (limit, requests) => {
          const window = new FakeSlidingWindow();
          const clock = { now: 0 };
          const handler = build(window, limit, clock);
          const admitted = new Map<string, number[]>();
          for (const { gapMs, ip } of requests) {
            clock.now += gapMs;
            const result = await handler(apiEvent({ sourceIp: ip }), lambdaContext());
            const times = admitted.get(ip) ?? [];
            const inWindow = times.filter((t) => t > clock.now - RATE_WINDOW_MS).length;
            if (result.statusCode === 204) {
              // Never more than `limit` admitted in (now - 60 s, now].
              expect(inWindow + 1).toBeLessThanOrEqual(limit);
              times.push(clock.now);
              admitted.set(ip, times);
            } else {
              // Never a 429 while under the limit.
              expect(result.statusCode).toBe(429);
              expect(inWindow).toBe(limit);
            }
          }
        },
      ),
      { numRuns: 200 },
    );
  });
});
