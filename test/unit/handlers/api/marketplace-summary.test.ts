import { MarketplaceAuthError, MarketplaceUnavailableError } from '../../../../lambdas/domain/errors';
import type { Server } from '../../../../lambdas/domain/marketplace-types';
import type { MarketplaceClient } from '../../../../lambdas/domain/ports';
import { createMarketplaceSummaryHandler } from '../../../../lambdas/handlers/api/marketplace-summary';
import { apiEvent, lambdaContext } from '../../../fixtures/events/api-event';
import { apiEnv } from '../../../fakes/env';
import { FakeSlidingWindow } from '../../../fakes/sliding-window';
import { parseResult } from '../../../helpers/parse-result';

const server = (id: number, gpu: string, rented: boolean, spot?: number) =>
  ({
    id,
    rented,
    gpu_array: [gpu],
    price: { on_demand: {}, spot: {}, usd_per_hour: spot === undefined ? {} : { spot } },
  }) as unknown as Server;

const setup = (listServers: MarketplaceClient['listServers'], env: Record<string, string> = {}) => {
  const marketplace = { listServers } as MarketplaceClient;
  const deps = { env: apiEnv(env), window: new FakeSlidingWindow(), marketplace, now: () => 0 };
  const handler = createMarketplaceSummaryHandler(() => deps);
  return async () =>
    parseResult(await handler(apiEvent({ method: 'GET', path: '/webhook/marketplace' }), lambdaContext()));
};

describe('Handler: marketplace-summary', () => {
  it('returns the summary without a signature', async () => {
    const get = setup(async () => [server(1, 'NVIDIA A100', false, 0.4), server(2, 'NVIDIA H100', true, 0.9)]);
    expect(await get()).toMatchObject({
      statusCode: 200,
      body: {
        status: 'ok',
        summary: { NVIDIA: { available: 1, total: 2, min_price: 0.4 } },
        total_servers: 2,
        total_available: 1,
      },
    });
  });

  it('returns 500 Marketplace unavailable with a short reason when the marketplace fails', async () => {
    const get = setup(async () => {
      throw new MarketplaceUnavailableError('status 502');
    });
    expect(await get()).toMatchObject({ statusCode: 500, body: { error: 'Marketplace unavailable: status 502' } });
  });

  it('does not echo unexpected error details', async () => {
    const get = setup(async () => {
      throw new Error('socket hang up auth=KEY123');
    });
    const result = await get();
    expect(result).toMatchObject({ statusCode: 500, body: { error: 'Marketplace unavailable: unexpected error' } });
  });

  it('names an auth failure', async () => {
    const get = setup(async () => {
      throw new MarketplaceAuthError();
    });
    expect((await get()).body.error).toBe('Marketplace unavailable: marketplace API key missing or invalid');
  });

  it('is rate limited', async () => {
    const get = setup(async () => [], { MAX_REQUESTS_PER_MINUTE: '1' });
    expect((await get()).statusCode).toBe(200);
    expect(await get()).toMatchObject({ statusCode: 429, body: { error: 'Rate limit exceeded' } });
  });
});
