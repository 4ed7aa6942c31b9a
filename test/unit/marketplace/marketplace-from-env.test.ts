import { relayEnvSchema } from '../../../lambdas/adapters/env';
import { startSimulator, type MarketplaceSimulator } from '../../../local/simulator/marketplace-simulator';
import { startDynalite, type LocalDynamo } from '../../helpers/dynalite';

describe('Function: marketplaceFromEnv', () => {
  let sim: MarketplaceSimulator;
  let dynamo: LocalDynamo;
  const saved = process.env.AWS_ENDPOINT_URL_DYNAMODB;

  beforeAll(async () => {
    [sim, dynamo] = await Promise.all([
      startSimulator({ minIntervalMs: 20, readyDelayMs: 0 }),
      startDynalite({ tableName: 'relay-test' }),
    ]);
    // The module-level DynamoDB client reads this when it is created, as in the local runtime.
    process.env.AWS_ENDPOINT_URL_DYNAMODB = dynamo.endpoint;
  });
  afterEach(() => jest.restoreAllMocks());
  afterAll(async () => {
    if (saved === undefined) delete process.env.AWS_ENDPOINT_URL_DYNAMODB;
    else process.env.AWS_ENDPOINT_URL_DYNAMODB = saved;
    await Promise.all([sim.close(), dynamo.close()]);
  });

  it('builds a paced, cached client from the env contract', async () => {
    // Prepare
    const { marketplaceFromEnv } = await import('../../../lambdas/adapters/marketplace-from-env');
    const { DynamoDbPacingGate } = await import('../../../lambdas/adapters/dynamodb/dynamodb-pacing-gate');
    const minIntervalMs = 40;
    const env = relayEnvSchema().parse({
      TABLE_NAME: 'relay-test',
      MARKETPLACE_URL: sim.url,
      MARKETPLACE_API_KEY: sim.apiKey,
      MARKETPLACE_MIN_INTERVAL_MS: String(minIntervalMs),
      ORDER_POLL_INTERVAL_SECONDS: '60',
    });
    // Every slot the shared (DynamoDB) pacing gate hands out, and every request the client sends with
    // the answer's result code. Whether the simulator, with its own timer and event loop, also saw
    // the requests 20 ms apart depends on scheduler jitter, so the test does not count on it: a code 5
    // answer is allowed as long as the client retried it and the call succeeded.
    const slots: Promise<number | undefined>[] = [];
    for (const method of ['acquire', 'acquireInLane'] as const) {
      const original = DynamoDbPacingGate.prototype[method] as (...args: unknown[]) => Promise<number | undefined>;
      jest.spyOn(DynamoDbPacingGate.prototype, method).mockImplementation(function (this: unknown, ...args: unknown[]) {
        const slot = original.apply(this, args);
        slots.push(slot);
        return slot as never;
      });
    }
    const sent: { endpoint: string; code: unknown }[] = [];
    const realFetch = globalThis.fetch;
    jest.spyOn(globalThis, 'fetch').mockImplementation(async (input, init) => {
      const response = await realFetch(input, init);
      const body = (await response
        .clone()
        .json()
        .catch(() => ({}))) as { code?: unknown };
      sent.push({
        endpoint: new URL(String(input instanceof Request ? input.url : input)).pathname.replace('/v1/', ''),
        code: body.code,
      });
      return response;
    });
    const processed = (endpoint: string) => sent.filter((s) => s.endpoint === endpoint && s.code !== 5).length;
    const a = marketplaceFromEnv(env);
    const b = marketplaceFromEnv(env);

    // Act
    const [servers, again, wallets, orders] = await Promise.all([
      a.listServers(),
      b.listServers(),
      a.listWallets(),
      b.listOrders(),
    ]);
    const { order_id } = await a.createOrder({
      renting_server: sim.control
        .servers()
        .find((s) => s.online && !s.rented && s.allowed_coins.includes('NATIVE-Blockchain'))!.id,
      type: 'on-demand',
      currency: 'NATIVE-Blockchain',
      image: 'img',
    });
    const afterCreate = await b.listOrders();
    const sentBefore = sent.length;
    await a.listServers();
    await b.listServers();

    // Assess: the answers
    expect(servers.length).toBeGreaterThanOrEqual(30);
    expect(again).toEqual(servers);
    expect(wallets.length).toBeGreaterThan(0);
    expect(orders).toEqual([]);
    expect(afterCreate.map((o) => o.order_id)).toEqual([order_id]);
    // Pacing: every send took a gate slot, and the slots are at least the interval apart, except where
    // a rate-limited answer widened the interval: the new timeline starts one new spacing after the
    // refused send, which may fall closer than the interval to a slot handed out before (docs/production-marketplace.md,
    // "Pacing adapts to 429s"). At most one such pair per rate-limited answer.
    const claimed = (await Promise.all(slots)).filter((t): t is number => t !== undefined).sort((x, y) => x - y);
    expect(claimed.length).toBeGreaterThanOrEqual(sent.length);
    const close = claimed.slice(1).filter((t, i) => t - claimed[i]! < minIntervalMs).length;
    expect(close).toBeLessThanOrEqual(sent.filter((s) => s.code === 5).length);
    // Every rate-limited answer was retried: each call above succeeded, and the simulator's count matches ours.
    expect(sent.filter((s) => s.code === 5)).toHaveLength(sim.control.counters().rateLimited);
    expect(processed('create_order')).toBe(1);
    // Caching: concurrent cache misses in two instances may each read once; never more, and warm reads send nothing.
    expect(processed('marketplace')).toBeGreaterThanOrEqual(1);
    expect(processed('marketplace')).toBeLessThanOrEqual(2);
    expect(processed('my_orders')).toBeLessThanOrEqual(3);
    expect(sent.length).toBe(sentBefore);
  });

  it('surfaces a wrong API key as MarketplaceAuthError', async () => {
    const { marketplaceFromEnv } = await import('../../../lambdas/adapters/marketplace-from-env');
    const env = relayEnvSchema().parse({
      TABLE_NAME: 'relay-test',
      MARKETPLACE_URL: sim.url,
      MARKETPLACE_API_KEY: 'nope',
      MARKETPLACE_MIN_INTERVAL_MS: '40',
    });
    await expect(marketplaceFromEnv(env).listWallets()).rejects.toMatchObject({
      name: 'MarketplaceAuthError',
      code: 3,
    });
  });

  it("passes MARKETPLACE_PRICE_PERIOD to the reader: day turns the spec simulator's USD (per hour) into a 24th", async () => {
    const { marketplaceFromEnv } = await import('../../../lambdas/adapters/marketplace-from-env');
    const env = (period: Record<string, string>) =>
      relayEnvSchema().parse({
        TABLE_NAME: 'relay-test',
        MARKETPLACE_URL: sim.url,
        MARKETPLACE_API_KEY: sim.apiKey,
        MARKETPLACE_MIN_INTERVAL_MS: '40',
        ...period,
      });
    // No shared cache (max age 0): each client reads the listing itself.
    const [asSent, perDay] = await Promise.all([
      marketplaceFromEnv(env({}), { cacheMaxAgeMs: 0 }).listServers(),
      marketplaceFromEnv(env({ MARKETPLACE_PRICE_PERIOD: 'day' }), { cacheMaxAgeMs: 0 }).listServers(),
    ]);
    const spotOf = (servers: typeof asSent) =>
      servers.find((s) => s.price.usd_per_hour.spot !== undefined)?.price.usd_per_hour.spot as number;
    expect(spotOf(asSent)).toBe(
      sim.control.servers().find((s) => s.gpu_array.length > 0 && s.price.usd.spot !== undefined)?.price.usd.spot,
    );
    expect(spotOf(perDay)).toBeCloseTo(spotOf(asSent) / 24, 6);
  });

  it.each([['hour'], ['day'], ['']])('MARKETPLACE_PRICE_PERIOD=%p is accepted (empty = unset)', (value) => {
    expect(
      relayEnvSchema().parse({ TABLE_NAME: 't', MARKETPLACE_URL: sim.url, MARKETPLACE_PRICE_PERIOD: value })
        .MARKETPLACE_PRICE_PERIOD,
    ).toBe(value || undefined);
  });

  it('refuses any other MARKETPLACE_PRICE_PERIOD at cold start, naming the choices', () => {
    expect(() =>
      relayEnvSchema().parse({ TABLE_NAME: 't', MARKETPLACE_URL: sim.url, MARKETPLACE_PRICE_PERIOD: 'week' }),
    ).toThrow('MARKETPLACE_PRICE_PERIOD must be one of hour, day');
  });
});
