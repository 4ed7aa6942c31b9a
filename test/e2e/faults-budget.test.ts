/**
 * Time budgets end to end (issue 13, item 2): GET /webhook/marketplace through the local API Gateway
 * emulation, whose Lambda context counts down from the integration timeout (30 s in AWS; 8 s here,
 * which leaves the marketplace client 4 s after the route's 1 s and the client's 3 s reserves: the
 * property does not depend on the length). The marketplace client's per-attempt timeout is set far
 * beyond that (MARKETPLACE_TIMEOUT_MS=120000) and the listing hangs: without the invocation budget
 * the gateway would answer its own 504; with it the client gives up in time and the route answers
 * its JSON 500.
 */
import { startTestRuntime, type LocalRuntime } from '../helpers/local-runtime';
import { request } from '../helpers/receivers';

describe('Faults: time budgets (local runtime)', () => {
  let runtime: LocalRuntime;

  beforeAll(async () => {
    runtime = await startTestRuntime({ env: { MARKETPLACE_TIMEOUT_MS: '120000' }, integrationTimeoutMs: 8_000 });
  });
  afterAll(async () => {
    await runtime.close();
  });

  it('a listing that hangs: the summary answers its own JSON 500 before the gateway gives up', async () => {
    // Prepare
    runtime.simulator!.control.inject({ endpoint: 'marketplace', kind: 'slow', delayMs: 120_000, times: 10_000 });
    // Act
    const answer = await request(`${runtime.url}/webhook/marketplace`);
    // Assess
    expect(answer.status).toBe(500);
    expect(answer.json).toEqual({ error: expect.stringMatching(/^Marketplace unavailable: /) });
    runtime.simulator!.control.clearFaults();
  }, 60_000);
});
