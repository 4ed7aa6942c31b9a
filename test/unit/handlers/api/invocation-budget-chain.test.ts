import type { Context } from 'aws-lambda';
import { testEnv } from '../../../fakes/env';
import { remainingMs } from '../../../../lambdas/adapters/invocation-budget';
import { createMarketplaceSummaryHandler } from '../../../../lambdas/handlers/api/marketplace-summary';
import type { RelayEvent } from '../../../../lambdas/middleware/http';

describe('API chain: invocation budget', () => {
  it("lets the route's marketplace client see the invocation's remaining time", async () => {
    // Prepare
    const seen: number[] = [];
    const handler = createMarketplaceSummaryHandler(() => ({
      env: testEnv(),
      window: { hit: async () => ({ allowed: true, count: 1 }) } as never,
      marketplace: {
        listServers: async () => {
          seen.push(remainingMs());
          return [];
        },
      } as never,
    }));
    const event = {
      version: '2.0',
      routeKey: 'GET /webhook/marketplace',
      rawPath: '/webhook/marketplace',
      rawQueryString: '',
      headers: {},
      requestContext: {
        http: { method: 'GET', path: '/webhook/marketplace', sourceIp: '192.0.2.1' },
        requestId: 'r-1',
      },
      isBase64Encoded: false,
    } as unknown as RelayEvent;
    // Act
    const res = await handler(event, {
      getRemainingTimeInMillis: () => 7_000,
      functionName: 'f',
      awsRequestId: 'r-1',
    } as unknown as Context);
    // Assess
    expect(res.statusCode).toBe(200);
    expect(seen).toEqual([7_000]);
  });
});
