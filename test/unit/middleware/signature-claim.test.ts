/**
 * The one-route claim of a verified signature (issue 29): keyed by the signature and key id alone,
 * bound to the route that saw it first, for the replay window + 60 s; the signed chain of real route
 * handlers refuses a signature on a second route with 401 and queues nothing.
 */
import { createCancelOrderHandler } from '../../../lambdas/handlers/api/cancel-order';
import { createExtendOrderHandler } from '../../../lambdas/handlers/api/extend-order';
import { createStatusHandler } from '../../../lambdas/handlers/api/status';
import { signatureClaimOf } from '../../../lambdas/middleware/signature-claim';
import { acceptFakes } from '../../fakes/deps';
import { SECRET } from '../../fakes/env';
import type { FakeIdempotencyStore } from '../../fakes/idempotency';
import { apiEvent, lambdaContext, sign, v2Headers } from '../../fixtures/events/api-event';
import { parseResult } from '../../helpers/parse-result';

const NOW_MS = 1_700_000_000_000;

describe('Function: signatureClaimOf', () => {
  it('keys by key id and signature alone, until timestamp + 300 s + 60 s', () => {
    expect(signatureClaimOf({ version: 'v2', hex: 'ab', timestamp: '1700000000', keyId: 'ci' }, NOW_MS)).toEqual({
      key: 'route:ci:ab',
      ttlSeconds: 360,
    });
    expect(signatureClaimOf({ version: 'v1', hex: 'ab', timestamp: '1699999900' }, NOW_MS)).toEqual({
      key: 'route::ab',
      ttlSeconds: 260,
    });
  });

  it('binds a body-only v1 signature for 360 s from its first use', () => {
    expect(signatureClaimOf({ version: 'v1', hex: 'ab' }, NOW_MS).ttlSeconds).toBe(360);
  });
});

describe('Middleware: claimSignature in the signed chain', () => {
  it("refuses a timestamped v1 signature on a second route with 401 `Invalid signature`; nothing queued; the first route's copy gets its task", async () => {
    const { fakes, deps } = acceptFakes();
    const body = '{"order_id":7,"hours":2}';
    const headers = { 'x-webhook-timestamp': '1700000000', 'x-webhook-signature': sign(SECRET, body, '1700000000') };
    const extend = createExtendOrderHandler(() => deps);
    const cancel = createCancelOrderHandler(() => deps);
    const first = parseResult(
      await extend(apiEvent({ path: '/webhook/extend-order', body, headers }), lambdaContext()),
    );
    const replay = parseResult(
      await cancel(apiEvent({ path: '/webhook/cancel-order', body, headers }), lambdaContext()),
    );
    const again = parseResult(
      await extend(apiEvent({ path: '/webhook/extend-order', body, headers }), lambdaContext()),
    );
    expect(first.statusCode).toBe(202);
    expect(replay).toMatchObject({ statusCode: 401, body: { error: 'Invalid signature' } });
    expect(again).toMatchObject({ statusCode: 202, body: { task_id: first.body.task_id } });
    expect(fakes.queue.sent.map((m) => m.kind)).toEqual(['extend-order']);
  });

  it('refuses a body-only v1 signature on a second route too (the claim is made before the body is read)', async () => {
    const { fakes, deps } = acceptFakes();
    const headers = { 'x-webhook-signature': sign(SECRET, '{}') };
    const status = createStatusHandler(() => deps);
    const cancel = createCancelOrderHandler(() => deps);
    expect(
      parseResult(await status(apiEvent({ path: '/webhook/status', body: '{}', headers }), lambdaContext())).statusCode,
    ).toBe(202);
    expect(
      parseResult(await cancel(apiEvent({ path: '/webhook/cancel-order', body: '{}', headers }), lambdaContext())),
    ).toMatchObject({ statusCode: 401, body: { error: 'Invalid signature' } });
    // The spec's body-only requests to their own route still make a task each.
    expect(
      parseResult(await status(apiEvent({ path: '/webhook/status', body: '{}', headers }), lambdaContext())).statusCode,
    ).toBe(202);
    expect(fakes.queue.sent.map((m) => m.kind)).toEqual(['status', 'status']);
  });

  it('answers 503 and queues nothing when the claim store fails', async () => {
    const { fakes, deps } = acceptFakes();
    (fakes.signedRequests as FakeIdempotencyStore).claim = async () => {
      throw new Error('dynamodb down');
    };
    const body = '{}';
    const status = createStatusHandler(() => deps);
    const answer = parseResult(
      await status(
        apiEvent({ path: '/webhook/status', body, headers: v2Headers(SECRET, 'POST', '/webhook/status', body) }),
        lambdaContext(),
      ),
    );
    expect(answer).toMatchObject({
      statusCode: 503,
      body: { error: 'Signature verification unavailable; retry later' },
    });
    expect(fakes.queue.sent).toHaveLength(0);
  });

  it('accepts v2 under SIGNATURE_VERSIONS=v2 (the deployed default) and refuses v1 with `signature v2 required for this route`', async () => {
    const { fakes, deps } = acceptFakes({ SIGNATURE_VERSIONS: 'v2' });
    const body = '{}';
    const status = createStatusHandler(() => deps);
    const v2 = parseResult(
      await status(
        apiEvent({ path: '/webhook/status', body, headers: v2Headers(SECRET, 'POST', '/webhook/status', body) }),
        lambdaContext(),
      ),
    );
    const v1 = parseResult(
      await status(
        apiEvent({
          path: '/webhook/status',
          body,
          headers: { 'x-webhook-timestamp': '1700000000', 'x-webhook-signature': sign(SECRET, body, '1700000000') },
        }),
        lambdaContext(),
      ),
    );
    expect(v2.statusCode).toBe(202);
    expect(v1).toMatchObject({ statusCode: 401, body: { error: 'signature v2 required for this route' } });
    expect(fakes.queue.sent).toHaveLength(1);
  });
});
