import { RelayEnvSchema } from '../../../lambdas/adapters/env';
import { startSimulator, type MarketplaceSimulator } from '../../../local/simulator/marketplace-simulator';
import { startDynalite, type LocalDynamo } from '../../helpers/dynalite';

describe('Function: marketplaceFromEnv', () => {
  let sim: MarketplaceSimulator;
  let dynamo: LocalDynamo;
  const saved = process.env.AWS_ENDPOINT_URL_DYNAMODB;

  beforeAll(async () => {
    [sim, dynamo] = await Promise.all([startSimulator({ minIntervalMs: 20, readyDelayMs: 0 }), startDynalite({ tableName: 'relay-test' })]);
    // The module-level DynamoDB client reads this when it is created, as in the local runtime.
    process.env.AWS_ENDPOINT_URL_DYNAMODB = dynamo.endpoint;
  });
  afterAll(async () => {
    if (saved === undefined) delete process.env.AWS_ENDPOINT_URL_DYNAMODB;
    else process.env.AWS_ENDPOINT_URL_DYNAMODB = saved;
    await Promise.all([sim.close(), dynamo.close()]);
  });

  it('builds a paced, cached client from the env contract', async () => {
    // Prepare
    const { marketplaceFromEnv } = await import('../../../lambdas/adapters/marketplace-from-env');
    const env = RelayEnvSchema.parse({
      TABLE_NAME: 'relay-test',
      MARKETPLACE_URL: sim.url,
      MARKETPLACE_API_KEY: sim.apiKey,
      MARKETPLACE_MIN_INTERVAL_MS: '40',
      ORDER_POLL_INTERVAL_SECONDS: '60',
    });
    const a = marketplaceFromEnv(env);
    const b = marketplaceFromEnv(env);
    // Act
    const [servers, again, wallets, orders] = await Promise.all([a.listServers(), b.listServers(), a.listWallets(), b.listOrders()]);
    const { order_id } = await a.createOrder({
      renting_server: sim.control.servers().find((s) => s.online && !s.rented && s.allowed_coins.includes('NATIVE-Blockchain'))!.id,
      type: 'on-demand',
      currency: 'NATIVE-Blockchain',
      image: 'img',
    });
    const afterCreate = await b.listOrders();
    const readsBefore = sim.control.counters().calls.marketplace;
    await a.listServers();
    await b.listServers();
    // Assess
    expect(servers.length).toBeGreaterThanOrEqual(30);
    expect(again).toEqual(servers);
    expect(wallets.length).toBeGreaterThan(0);
    expect(orders).toEqual([]);
    expect(afterCreate.map((o) => o.order_id)).toEqual([order_id]);
    const { calls, rateLimited } = sim.control.counters();
    expect(rateLimited).toBe(0);
    // Concurrent cache misses in two instances may each read once; never more.
    expect(calls.marketplace).toBeLessThanOrEqual(2);
    expect(calls.my_orders).toBeLessThanOrEqual(3);
    expect(calls.marketplace).toBe(readsBefore);
  });

  it('surfaces a wrong API key as MarketplaceAuthError', async () => {
    const { marketplaceFromEnv } = await import('../../../lambdas/adapters/marketplace-from-env');
    const env = RelayEnvSchema.parse({ TABLE_NAME: 'relay-test', MARKETPLACE_URL: sim.url, MARKETPLACE_API_KEY: 'nope', MARKETPLACE_MIN_INTERVAL_MS: '40' });
    await expect(marketplaceFromEnv(env).listWallets()).rejects.toMatchObject({ name: 'MarketplaceAuthError', code: 3 });
  });
});
