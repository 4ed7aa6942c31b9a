import { createCancelOrderHandler } from '../../../../lambdas/handlers/api/cancel-order';
import { createPriceAlertHandler } from '../../../../lambdas/handlers/api/price-alert';
import { createStatusHandler } from '../../../../lambdas/handlers/api/status';
import { apiEvent, lambdaContext, sign, signedPost } from '../../../fixtures/events/api-event';
import { acceptFakes } from '../../../fakes/deps';
import { SECRET } from '../../../fakes/env';
import { parseResult } from '../../../helpers/parse-result';

const setup = <
  H extends (event: ReturnType<typeof apiEvent>, ctx: ReturnType<typeof lambdaContext>) => Promise<unknown>,
>(
  create: (deps: () => ReturnType<typeof acceptFakes>['deps']) => H,
) => {
  const { fakes, deps } = acceptFakes();
  const handler = create(() => deps);
  return {
    fakes,
    call: async (event: ReturnType<typeof apiEvent>) => parseResult(await handler(event, lambdaContext())),
  };
};

describe('Handler: cancel-order', () => {
  const PATH = '/webhook/cancel-order';

  it('answers 202 queued and sends a cancel job', async () => {
    const { fakes, call } = setup(createCancelOrderHandler);
    const result = await call(signedPost(SECRET, PATH, '{"order_id":"42","callback_url":"https://cb.example/x"}'));
    expect(result).toMatchObject({
      statusCode: 202,
      body: { status: 'queued', message: 'Cancellation of order 42 queued' },
    });
    expect(fakes.queue.sent).toEqual([
      {
        task_id: result.body.task_id,
        kind: 'cancel-order',
        input: { order_id: 42, callback_url: 'https://cb.example/x' },
        origin: { source: 'webhook' },
      },
    ]);
    expect(fakes.workflow.started).toEqual([]);
  });

  it.each([['{}'], ['{"order_id":0}'], ['{"order_id":""}'], ['{"order_id":null}'], ['{"order_id":false}'], ['']])(
    'returns 400 order_id required for %s',
    async (body) => {
      const { fakes, call } = setup(createCancelOrderHandler);
      expect(await call(signedPost(SECRET, PATH, body))).toMatchObject({
        statusCode: 400,
        body: { error: 'order_id required' },
      });
      expect(fakes.queue.sent).toEqual([]);
    },
  );

  it('returns 400 order_id must be an integer for "12x"', async () => {
    const { call } = setup(createCancelOrderHandler);
    expect(await call(signedPost(SECRET, PATH, '{"order_id":"12x"}'))).toMatchObject({
      statusCode: 400,
      body: { error: 'order_id must be an integer' },
    });
  });

  it('returns 503 and removes the record when SQS refuses the message', async () => {
    const { fakes, call } = setup(createCancelOrderHandler);
    fakes.queue.fail = new Error('AWS.SimpleQueueService.NonExistentQueue');
    expect((await call(signedPost(SECRET, PATH, '{"order_id":1}'))).statusCode).toBe(503);
    expect(fakes.tasks.records.size).toBe(0);
  });
});

describe('Handler: price-alert', () => {
  const PATH = '/webhook/price-alert';

  it('answers 202 queued and sends a price-alert job with the default image', async () => {
    const { fakes, call } = setup(createPriceAlertHandler);
    const result = await call(signedPost(SECRET, PATH, '{"gpu_type":"A100","target_price":0.8}'));
    expect(result).toMatchObject({
      statusCode: 202,
      body: { status: 'queued', message: 'Price alert for A100 at or under $0.8/hr queued' },
    });
    expect(fakes.queue.sent[0]).toMatchObject({
      kind: 'price-alert',
      input: { gpu_type: 'A100', target_price: 0.8, image: fakes.env.DEFAULT_IMAGE },
    });
  });

  it.each([['{}'], ['{"gpu_type":"A100"}'], ['{"target_price":1}']])(
    'returns 400 gpu_type and target_price required for %s',
    async (body) => {
      const { fakes, call } = setup(createPriceAlertHandler);
      expect(await call(signedPost(SECRET, PATH, body))).toMatchObject({
        statusCode: 400,
        body: { error: 'gpu_type and target_price required' },
      });
      expect(fakes.queue.sent).toEqual([]);
    },
  );

  it('requires a signature', async () => {
    const { call } = setup(createPriceAlertHandler);
    expect(await call(apiEvent({ path: PATH, body: '{}' }))).toMatchObject({
      statusCode: 401,
      body: { error: 'Missing signature' },
    });
  });
});

describe('Handler: status', () => {
  const PATH = '/webhook/status';

  it('answers 202 with status and task_id only, for an empty body', async () => {
    const { fakes, call } = setup(createStatusHandler);
    const event = apiEvent({ path: PATH, headers: { 'x-webhook-signature': sign(SECRET, '') } });
    const result = await call(event);
    expect(result.statusCode).toBe(202);
    expect(result.body).toEqual({ status: 'queued', task_id: '00000000-0000-4000-8000-000000000001' });
    expect(fakes.queue.sent).toEqual([
      { task_id: '00000000-0000-4000-8000-000000000001', kind: 'status', input: {}, origin: { source: 'webhook' } },
    ]);
  });

  it('passes callback_url on', async () => {
    const { fakes, call } = setup(createStatusHandler);
    await call(signedPost(SECRET, PATH, '{"callback_url":"https://cb.example/s"}'));
    expect(fakes.queue.sent[0].input).toEqual({ callback_url: 'https://cb.example/s' });
  });

  it('returns 400 for an invalid callback_url', async () => {
    const { call } = setup(createStatusHandler);
    expect(await call(signedPost(SECRET, PATH, '{"callback_url":"javascript:alert(1)"}'))).toMatchObject({
      statusCode: 400,
      body: { error: 'callback_url must be an absolute http(s) URL' },
    });
  });

  it('returns the same task for a repeated Idempotency-Key', async () => {
    const { fakes, call } = setup(createStatusHandler);
    const a = await call(signedPost(SECRET, PATH, '{}', { headers: { 'idempotency-key': 'same' } }));
    const b = await call(signedPost(SECRET, PATH, '{}', { headers: { 'idempotency-key': 'same' } }));
    expect(b.body.task_id).toBe(a.body.task_id);
    expect(fakes.queue.sent).toHaveLength(1);
  });
});
