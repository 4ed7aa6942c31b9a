/**
 * The per-address rate limit end to end, at the spec's default of 60 requests per rolling 60 s.
 * Its own runtime (and so its own table): the window is per client address, and every request from
 * this test comes from 127.0.0.1.
 */
import { startTestRuntime, TEST_WEBHOOK_SECRET } from '../helpers/local-runtime';
import type { LocalRuntime } from '../helpers/local-runtime';
import { request, signedPost } from '../helpers/receivers';

describe('Local runtime: rate limit at the default 60 per minute', () => {
  let runtime: LocalRuntime;

  beforeAll(async () => {
    runtime = await startTestRuntime();
  });
  afterAll(async () => {
    await runtime?.close();
  });

  it('counts failed signatures and answers the 61st request with 429 and Retry-After', async () => {
    // Prepare: 60 requests that fail the signature check still fill the window
    const statuses: number[] = [];
    for (let i = 0; i < 60; i += 1) {
      statuses.push((await signedPost(runtime.url, '/webhook/status', {}, 'wrong-secret')).status);
    }
    // Act: a correctly signed 61st request
    const limited = await signedPost(runtime.url, '/webhook/status', {}, TEST_WEBHOOK_SECRET);
    const marketplace = await request(`${runtime.url}/webhook/marketplace`);
    const health = await request(`${runtime.url}/health`);
    // Assess
    expect(statuses).toEqual(Array(60).fill(401));
    expect(limited.status).toBe(429);
    expect(limited.json).toEqual({ error: 'Rate limit exceeded' });
    const retryAfter = Number(limited.headers.get('retry-after'));
    expect(Number.isInteger(retryAfter)).toBe(true);
    expect(retryAfter).toBeGreaterThan(0);
    expect(retryAfter).toBeLessThanOrEqual(60);
    expect(marketplace.status).toBe(429);
    expect(health.status).toBe(200);
  });
});
