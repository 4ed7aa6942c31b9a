/** POST /webhook/extend-order, POST /webhook/set-spot-price and create-order's max_hours (issue 14). */
import { createCreateOrderHandler } from '../../../../lambdas/handlers/api/create-order';
import { createExtendOrderHandler } from '../../../../lambdas/handlers/api/extend-order';
import { createSetSpotPriceHandler } from '../../../../lambdas/handlers/api/set-spot-price';
import { apiEvent, lambdaContext, signedPost } from '../../../fixtures/events/api-event';
import { acceptFakes } from '../../../fakes/deps';
import { SECRET } from '../../../fakes/env';
import { parseResult } from '../../../helpers/parse-result';

type Create = typeof createExtendOrderHandler;

const setup = (create: Create, env: Record<string, string> = {}) => {
  const { fakes, deps } = acceptFakes(env);
  const handler = create(() => deps);
  return {
    fakes,
    call: async (event: ReturnType<typeof apiEvent>) => parseResult(await handler(event, lambdaContext())),
  };
};

describe('Handler: extend-order', () => {
  const PATH = '/webhook/extend-order';

  it('answers 202 queued and sends an extend-order job with order_id, hours and callback_url', async () => {
    // Prepare
    const { fakes, call } = setup(createExtendOrderHandler);
    // Act
    const result = await call(
      signedPost(SECRET, PATH, '{"order_id":"42","hours":1.5,"callback_url":"https://cb.example/x"}'),
    );
    // Assess
    expect(result).toMatchObject({
      statusCode: 202,
      body: {
        status: 'queued',
        task_id: '00000000-0000-4000-8000-000000000001',
        message: 'Extension of order 42 by 1.5 h queued',
      },
    });
    expect(fakes.queue.sent).toEqual([
      {
        task_id: '00000000-0000-4000-8000-000000000001',
        kind: 'extend-order',
        input: { order_id: 42, hours: 1.5, callback_url: 'https://cb.example/x' },
        origin: { source: 'webhook' },
      },
    ]);
    expect(fakes.tasks.records.get('00000000-0000-4000-8000-000000000001')).toMatchObject({
      kind: 'extend-order',
      state: 'queued',
    });
    expect(fakes.workflow.started).toEqual([]);
  });

  it.each([
    ['{}', 'order_id and hours required'],
    ['{"order_id":42}', 'order_id and hours required'],
    ['{"order_id":42,"hours":null}', 'order_id and hours required'],
    ['{"hours":2}', 'order_id and hours required'],
    ['{"order_id":0,"hours":2}', 'order_id and hours required'],
    ['', 'order_id and hours required'],
    ['{"order_id":42,"hours":0}', 'hours must be a number between 0 and 720'],
    ['{"order_id":42,"hours":-1}', 'hours must be a number between 0 and 720'],
    ['{"order_id":42,"hours":721}', 'hours must be a number between 0 and 720'],
    ['{"order_id":42,"hours":"2"}', 'hours must be a number between 0 and 720'],
    ['{"order_id":"12x","hours":2}', 'order_id must be an integer'],
    ['{"order_id":42,"hours":2,"callback_url":"not a url"}', undefined],
  ])('returns 400 for %s and queues nothing', async (body, text) => {
    // Prepare
    const { fakes, call } = setup(createExtendOrderHandler);
    // Act
    const result = await call(signedPost(SECRET, PATH, body));
    // Assess
    expect(result.statusCode).toBe(400);
    if (text !== undefined) expect(result.body).toEqual({ error: text });
    expect(fakes.queue.sent).toEqual([]);
    expect(fakes.tasks.records.size).toBe(0);
  });

  it('requires a signature', async () => {
    const { fakes, call } = setup(createExtendOrderHandler);
    expect(await call(apiEvent({ path: PATH, body: '{"order_id":1,"hours":1}' }))).toMatchObject({
      statusCode: 401,
      body: { error: 'Missing signature' },
    });
    expect(fakes.queue.sent).toEqual([]);
  });

  it('is rate limited before the signature check', async () => {
    const { fakes, call } = setup(createExtendOrderHandler, { MAX_REQUESTS_PER_MINUTE: '1' });
    expect((await call(signedPost(SECRET, PATH, '{"order_id":1,"hours":1}'))).statusCode).toBe(202);
    expect(await call(apiEvent({ path: PATH, body: '{}' }))).toMatchObject({
      statusCode: 429,
      body: { error: 'Rate limit exceeded' },
    });
    expect(fakes.queue.sent).toHaveLength(1);
  });
});

describe('Handler: set-spot-price', () => {
  const PATH = '/webhook/set-spot-price';

  it('answers 202 queued and sends a set-spot-price job', async () => {
    const { fakes, call } = setup(createSetSpotPriceHandler);
    const result = await call(signedPost(SECRET, PATH, '{"order_id":7,"desired_price":12.5}'));
    expect(result).toMatchObject({
      statusCode: 202,
      body: { status: 'queued', message: 'Spot price change of order 7 to 12.5 queued' },
    });
    expect(fakes.queue.sent).toEqual([
      {
        task_id: result.body.task_id,
        kind: 'set-spot-price',
        input: { order_id: 7, desired_price: 12.5 },
        origin: { source: 'webhook' },
      },
    ]);
  });

  it.each([
    ['{}', 'order_id and desired_price required'],
    ['{"order_id":7}', 'order_id and desired_price required'],
    ['{"desired_price":3}', 'order_id and desired_price required'],
    ['{"order_id":7,"desired_price":null}', 'order_id and desired_price required'],
    ['{"order_id":null,"desired_price":3}', 'order_id and desired_price required'],
    ['{"order_id":7,"desired_price":0}', 'desired_price must be a positive number'],
    ['{"order_id":7,"desired_price":-2}', 'desired_price must be a positive number'],
    ['{"order_id":7,"desired_price":"3"}', 'desired_price must be a positive number'],
    [
      '{"order_id":7,"desired_price":20000000}',
      'desired_price must be between 0.00000001 and 10000000 (order currency per day)',
    ],
    [
      '{"order_id":7,"desired_price":1e-9}',
      'desired_price must be between 0.00000001 and 10000000 (order currency per day)',
    ],
    ['{"order_id":"x","desired_price":3}', 'order_id must be an integer'],
  ])('returns 400 for %s with the exact text and queues nothing', async (body, text) => {
    const { fakes, call } = setup(createSetSpotPriceHandler);
    expect(await call(signedPost(SECRET, PATH, body))).toMatchObject({ statusCode: 400, body: { error: text } });
    expect(fakes.queue.sent).toEqual([]);
    expect(fakes.tasks.records.size).toBe(0);
  });

  it('answers 400 (not 5xx) for a body that is not JSON', async () => {
    const { fakes, call } = setup(createSetSpotPriceHandler);
    expect((await call(signedPost(SECRET, PATH, '{"order_id":'))).statusCode).toBe(400);
    expect(fakes.queue.sent).toEqual([]);
  });
});

describe('Handler: create-order max_hours', () => {
  const PATH = '/webhook/create-order';

  it('carries max_hours in the workflow request', async () => {
    const { fakes, call } = setup(createCreateOrderHandler);
    expect((await call(signedPost(SECRET, PATH, '{"gpu_type":"A100","max_hours":0.25}'))).statusCode).toBe(202);
    expect(fakes.workflow.started[0].input.request).toMatchObject({ gpu_type: 'A100', max_hours: 0.25 });
  });

  it('applies DEFAULT_MAX_HOURS when max_hours is absent or null, and no lease without either', async () => {
    const withDefault = setup(createCreateOrderHandler, { DEFAULT_MAX_HOURS: '8' });
    await withDefault.call(signedPost(SECRET, PATH, '{"gpu_type":"A100"}'));
    await withDefault.call(signedPost(SECRET, PATH, '{"gpu_type":"A100","max_hours":null}'));
    await withDefault.call(signedPost(SECRET, PATH, '{"gpu_type":"A100","max_hours":2}'));
    expect(withDefault.fakes.workflow.started.map((s) => s.input.request.max_hours)).toEqual([8, 8, 2]);

    const without = setup(createCreateOrderHandler);
    await without.call(signedPost(SECRET, PATH, '{"gpu_type":"A100"}'));
    expect(without.fakes.workflow.started[0].input.request).not.toHaveProperty('max_hours');
  });

  it.each([['0'], ['-1'], ['720.5'], ['"4"'], ['true'], ['[]']])(
    'returns 400 for max_hours %s and starts nothing',
    async (value) => {
      const { fakes, call } = setup(createCreateOrderHandler);
      expect(await call(signedPost(SECRET, PATH, `{"gpu_type":"A100","max_hours":${value}}`))).toMatchObject({
        statusCode: 400,
        body: { error: 'max_hours must be a number between 0 and 720' },
      });
      expect(fakes.workflow.started).toEqual([]);
      expect(fakes.tasks.records.size).toBe(0);
    },
  );

  it('accepts 720 exactly', async () => {
    const { call } = setup(createCreateOrderHandler);
    expect((await call(signedPost(SECRET, PATH, '{"gpu_type":"A100","max_hours":720}'))).statusCode).toBe(202);
  });
});
