/**
 * TRUSTED_PROXIES end to end (issue 39 §4): behind a reverse proxy every request arrives from the
 * proxy's address, so the rate limit must count the client the proxy names in X-Forwarded-For, and
 * only when the proxy is trusted. Here the test itself is the "proxy" at 127.0.0.1.
 */
import { startTestRuntime } from '../helpers/local-runtime';
import type { LocalRuntime } from '../helpers/local-runtime';
import { request } from '../helpers/receivers';

const marketplace = (runtime: LocalRuntime, client: string) =>
  request(`${runtime.url}/webhook/marketplace`, { headers: { 'x-forwarded-for': client } });

describe('Local runtime: rate limit behind a trusted proxy', () => {
  let runtime: LocalRuntime;

  beforeAll(async () => {
    runtime = await startTestRuntime({ env: { TRUSTED_PROXIES: '127.0.0.1', MAX_REQUESTS_PER_MINUTE: '2' } });
  });
  afterAll(async () => {
    await runtime?.close();
  });

  it('counts each forwarded client on its own, and a client cannot spoof its way out', async () => {
    // Act: two clients behind the proxy use their two requests each; the first asks a third time,
    // once with a made-up address on the left of the header (the proxy appends the real one).
    const a = [await marketplace(runtime, '198.51.100.1'), await marketplace(runtime, '198.51.100.1')];
    const b = [await marketplace(runtime, '198.51.100.2'), await marketplace(runtime, '198.51.100.2')];
    const aAgain = await marketplace(runtime, '203.0.113.77, 198.51.100.1');

    // Assert
    expect([...a, ...b].map((r) => r.status)).toEqual([200, 200, 200, 200]);
    expect(aAgain.status).toBe(429);
  });
});
