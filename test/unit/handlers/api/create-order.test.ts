import { createCreateOrderHandler } from '../../../../lambdas/handlers/api/create-order';
import { apiEvent, lambdaContext, sign, signedPost } from '../../../fixtures/events/api-event';
import { acceptFakes } from '../../../fakes/deps';
import { PREVIOUS_SECRET, SECRET } from '../../../fakes/env';
import { parseResult } from '../../../helpers/parse-result';

const PATH = '/webhook/create-order';

const setup = (env: Record<string, string> = {}) => {
  const { fakes, deps } = acceptFakes(env);
  const handler = createCreateOrderHandler(() => deps);
  const call = async (event: ReturnType<typeof apiEvent>) => parseResult(await handler(event, lambdaContext()));
  return { fakes, call };
};

describe('Handler: create-order', () => {
  it('answers 202 queued and starts the workflow with the normalized request', async () => {
    // Prepare
    const { fakes, call } = setup();
    // Act
    const result = await call(signedPost(SECRET, PATH, '{"gpu_type":"RTX 4090","max_price":0.5}'));
    // Assess
    expect(result.statusCode).toBe(202);
    expect(result.headers['Content-Type']).toBe('application/json');
    expect(result.body).toEqual({
      status: 'queued',
      task_id: '00000000-0000-4000-8000-000000000001',
      message: 'Order creation queued for RTX 4090',
    });
    expect(fakes.workflow.started).toHaveLength(1);
    expect(fakes.workflow.started[0].input).toMatchObject({
      task_id: '00000000-0000-4000-8000-000000000001',
      request: {
        gpu_type: 'RTX 4090',
        max_price: 0.5,
        use_spot: true,
        image: fakes.env.DEFAULT_IMAGE,
        currency: 'NATIVE-Blockchain',
        ports: { '22': 'tcp', '8888': 'http' },
      },
      origin: { source: 'webhook' },
      timing: { poll_interval_seconds: 5, ready_timeout_seconds: 120, soft_deadline: 1_700_000_300 },
    });
    expect(fakes.tasks.records.get('00000000-0000-4000-8000-000000000001')).toMatchObject({
      kind: 'create-order',
      state: 'queued',
    });
    expect(fakes.queue.sent).toEqual([]);
  });

  it('uses config defaults from the environment', async () => {
    const { fakes, call } = setup({
      DEFAULT_IMAGE: 'my/img:1',
      DEFAULT_CURRENCY: 'bitcoin',
      DEFAULT_PORTS: '{"22":"tcp"}',
    });
    await call(signedPost(SECRET, PATH, '{"gpu_type":"A100","use_spot":false}'));
    expect(fakes.workflow.started[0].input.request).toEqual({
      gpu_type: 'A100',
      image: 'my/img:1',
      currency: 'bitcoin',
      ports: { '22': 'tcp' },
      use_spot: false,
    });
  });

  it.each([
    ['{}', 'gpu_type required'],
    ['{"gpu_type":""}', 'gpu_type required'],
    ['{"gpu_type":"A100","max_price":"abc"}', 'max_price must be a number'],
    ['{"gpu_type":"A100","use_spot":"yes"}', 'use_spot must be a boolean'],
    ['{"gpu_type":"A100","callback_url":"ftp://x.example/"}', 'callback_url must be an absolute http(s) URL'],
    [
      '{"gpu_type":"A100","callback_url":"http://10.0.0.5/cb"}',
      'callback_url must not point at a private, loopback or reserved address',
    ],
    ['{"gpu_type":', 'Invalid JSON body'],
    ['[1]', 'JSON body must be an object'],
    ['', 'gpu_type required'],
  ])('returns 400 for %s with "%s" and queues nothing', async (body, error) => {
    const { fakes, call } = setup();
    const result = await call(signedPost(SECRET, PATH, body));
    expect(result).toMatchObject({ statusCode: 400, body: { error } });
    expect(fakes.workflow.started).toEqual([]);
    expect(fakes.tasks.records.size).toBe(0);
  });

  it('accepts a private callback_url when ALLOW_PRIVATE_CALLBACKS is true', async () => {
    const { fakes, call } = setup({ ALLOW_PRIVATE_CALLBACKS: 'true' });
    const result = await call(signedPost(SECRET, PATH, '{"gpu_type":"A100","callback_url":"http://127.0.0.1:9/cb"}'));
    expect(result.statusCode).toBe(202);
    // The URL is kept in the task record (the deliverers read it there), never in the workflow input.
    expect(fakes.tasks.records.get(fakes.workflow.started[0].taskId)?.request.callback_url).toBe(
      'http://127.0.0.1:9/cb',
    );
    expect(JSON.stringify(fakes.workflow.started[0].input)).not.toMatch(/callback_url|127\.0\.0\.1/);
  });

  it('checks the signature before the body: a bad body unsigned is 401, not 400', async () => {
    const { call } = setup();
    expect((await call(apiEvent({ path: PATH, body: '{' }))).body).toEqual({ error: 'Missing signature' });
    expect(
      (await call(apiEvent({ path: PATH, body: '{', headers: { 'x-webhook-signature': sign('wrong', '{') } }))).body,
    ).toEqual({ error: 'Invalid signature' });
  });

  it('accepts a base64-encoded body as API Gateway sends it', async () => {
    const { fakes, call } = setup();
    const body = Buffer.from('{"gpu_type":"H100"}');
    const result = await call(
      apiEvent({
        path: PATH,
        body,
        headers: { 'content-type': 'text/plain+weird', 'x-webhook-signature': sign(SECRET, body) },
      }),
    );
    expect(result.statusCode).toBe(202);
    expect(fakes.workflow.started[0].input.request.gpu_type).toBe('H100');
  });

  it('accepts the header in any case', async () => {
    const { call } = setup();
    const body = '{"gpu_type":"A100"}';
    const event = apiEvent({ path: PATH, body });
    event.headers = { 'Content-Type': 'application/json', 'X-Webhook-Signature': sign(SECRET, body) };
    expect((await call(event)).statusCode).toBe(202);
  });

  it('accepts the previous secret during a rotation', async () => {
    const { fakes, call } = setup();
    fakes.secrets = [SECRET, PREVIOUS_SECRET];
    expect((await call(signedPost(PREVIOUS_SECRET, PATH, '{"gpu_type":"A100"}'))).statusCode).toBe(202);
  });

  it('returns 413 for a body over 64 KiB and queues nothing', async () => {
    const { fakes, call } = setup();
    const body = JSON.stringify({ gpu_type: 'A100', pad: 'x'.repeat(70_000) });
    expect(await call(signedPost(SECRET, PATH, body))).toMatchObject({
      statusCode: 413,
      body: { error: 'Request body too large (max 65536 bytes)' },
    });
    expect(fakes.workflow.started).toEqual([]);
  });

  describe('replay window', () => {
    it('requires X-Webhook-Timestamp when REQUIRE_WEBHOOK_TIMESTAMP=true', async () => {
      const { call } = setup({ REQUIRE_WEBHOOK_TIMESTAMP: 'true' });
      const body = '{"gpu_type":"A100"}';
      expect((await call(signedPost(SECRET, PATH, body))).body).toEqual({ error: 'Missing timestamp' });
      const ts = '1700000000';
      const fresh = apiEvent({
        path: PATH,
        body,
        headers: { 'x-webhook-timestamp': ts, 'x-webhook-signature': sign(SECRET, body, ts) },
      });
      expect((await call(fresh)).statusCode).toBe(202);
    });

    it('answers copies of one signed timestamped request with the first task_id and starts one workflow (hex case changes nothing)', async () => {
      // Prepare
      const { fakes, call } = setup();
      const body = '{"gpu_type":"A100"}';
      const ts = '1700000000';
      const signature = sign(SECRET, body, ts);
      const copy = (sig: string, extra: Record<string, string> = {}) =>
        apiEvent({ path: PATH, body, headers: { 'x-webhook-timestamp': ts, 'x-webhook-signature': sig, ...extra } });
      // Act
      const first = await call(copy(signature));
      const again = await call(copy(signature));
      const upper = await call(copy(signature.toUpperCase(), { 'idempotency-key': 'fresh-key' }));
      fakes.clock += 200_000; // still inside the window
      const later = await call(copy(signature));
      // Assess
      expect(first).toMatchObject({ statusCode: 202, body: { task_id: '00000000-0000-4000-8000-000000000001' } });
      for (const repeat of [again, upper, later]) {
        expect(repeat).toMatchObject({
          statusCode: 202,
          body: { status: 'queued', task_id: '00000000-0000-4000-8000-000000000001' },
        });
        expect(repeat.headers['Idempotent-Replayed']).toBe('true');
      }
      expect(fakes.workflow.started).toHaveLength(1);
      expect(fakes.tasks.records.size).toBe(1);
    });

    it('makes a task per request for untimestamped signed requests (the spec allows them locally)', async () => {
      const { fakes, call } = setup();
      await call(signedPost(SECRET, PATH, '{"gpu_type":"A100"}'));
      await call(signedPost(SECRET, PATH, '{"gpu_type":"A100"}'));
      expect(fakes.workflow.started).toHaveLength(2);
    });

    it('rejects a stale timestamp', async () => {
      const { call } = setup();
      const body = '{"gpu_type":"A100"}';
      const ts = '1699999000';
      const stale = apiEvent({
        path: PATH,
        body,
        headers: { 'x-webhook-timestamp': ts, 'x-webhook-signature': sign(SECRET, body, ts) },
      });
      expect(await call(stale)).toMatchObject({ statusCode: 401, body: { error: 'Stale or invalid timestamp' } });
    });
  });

  describe('idempotency', () => {
    it('returns the same task_id for a repeated Idempotency-Key and starts nothing more', async () => {
      // Prepare
      const { fakes, call } = setup();
      const body = '{"gpu_type":"A100"}';
      // Act
      const first = await call(signedPost(SECRET, PATH, body, { headers: { 'idempotency-key': 'order-123' } }));
      const repeat = await call(
        signedPost(SECRET, PATH, '{"gpu_type":"H100"}', { headers: { 'Idempotency-Key': 'order-123' } }),
      );
      // Assess
      expect(first.statusCode).toBe(202);
      expect(repeat.statusCode).toBe(202);
      expect(repeat.body.task_id).toBe(first.body.task_id);
      expect(repeat.headers['Idempotent-Replayed']).toBe('true');
      expect(fakes.workflow.started).toHaveLength(1);
      expect(fakes.tasks.records.size).toBe(1);
    });

    it('starts a new task for a different key or no key', async () => {
      const { fakes, call } = setup();
      const body = '{"gpu_type":"A100"}';
      await call(signedPost(SECRET, PATH, body, { headers: { 'idempotency-key': 'a' } }));
      await call(signedPost(SECRET, PATH, body, { headers: { 'idempotency-key': 'b' } }));
      await call(signedPost(SECRET, PATH, body));
      await call(signedPost(SECRET, PATH, body));
      expect(fakes.workflow.started).toHaveLength(4);
    });

    it.each([['x'.repeat(201)], ['tab\there'], ['   '], ['caf\u00e9']])(
      'returns 400 for the Idempotency-Key %j',
      async (key) => {
        const { fakes, call } = setup();
        const result = await call(
          signedPost(SECRET, PATH, '{"gpu_type":"A100"}', { headers: { 'idempotency-key': key } }),
        );
        expect(result).toMatchObject({
          statusCode: 400,
          body: { error: 'Idempotency-Key must be 1 to 200 printable characters' },
        });
        expect(fakes.workflow.started).toEqual([]);
      },
    );
  });

  it('returns 503 when the workflow cannot start, leaving no queued record behind', async () => {
    // Prepare
    const { fakes, call } = setup();
    fakes.workflow.fail = new Error('ExecutionLimitExceeded arn:aws:states:secret');
    // Act
    const result = await call(
      signedPost(SECRET, PATH, '{"gpu_type":"A100"}', { headers: { 'idempotency-key': 'k1' } }),
    );
    // Assess
    expect(result).toMatchObject({
      statusCode: 503,
      body: { error: 'Could not queue the task; nothing was started. Retry later.' },
    });
    expect(fakes.tasks.records.size).toBe(0);
    expect(fakes.tasks.removed).toHaveLength(1);
    expect(fakes.idempotency.keys.size).toBe(0);
  });

  it('returns 429 after the limit, counting requests with failed signatures', async () => {
    const { call } = setup({ MAX_REQUESTS_PER_MINUTE: '2' });
    expect((await call(apiEvent({ path: PATH, body: '{}' }))).statusCode).toBe(401);
    expect((await call(signedPost(SECRET, PATH, '{"gpu_type":"A100"}'))).statusCode).toBe(202);
    const limited = await call(signedPost(SECRET, PATH, '{"gpu_type":"A100"}'));
    expect(limited).toMatchObject({ statusCode: 429, body: { error: 'Rate limit exceeded' } });
    expect(Number(limited.headers['Retry-After'])).toBeGreaterThanOrEqual(1);
  });

  it('can be imported and built without AWS: deps are read on the first request only', async () => {
    let built = 0;
    const handler = createCreateOrderHandler(() => {
      built += 1;
      throw new Error('no env');
    });
    expect(built).toBe(0);
    const result = parseResult(await handler(signedPost(SECRET, PATH, '{}'), lambdaContext()));
    expect(result).toMatchObject({ statusCode: 500, body: { error: 'Internal error' } });
  });
});
