import middy from '@middy/core';
import { decodeBody } from '../../../lambdas/middleware/body';
import { errorHandler } from '../../../lambdas/middleware/error-handler';
import type { RelayEvent } from '../../../lambdas/middleware/http';
import { signedPath, verifySignature, type VerifySignatureOptions } from '../../../lambdas/middleware/verify-signature';
import { apiEvent, lambdaContext, sign, signV2, v2Headers } from '../../fixtures/events/api-event';
import { parseResult } from '../../helpers/parse-result';

const SECRET = 's3cret';
const PREVIOUS = 'old-s3cret';
const NOW = 1_700_000_000_000;
const TS = String(NOW / 1000);

const build = (options: Partial<VerifySignatureOptions> = {}) => {
  const seen: Buffer[] = [];
  const handler = middy<RelayEvent>()
    .use(decodeBody())
    .use(verifySignature({ secrets: async () => [SECRET], now: () => NOW, ...options }))
    .use(errorHandler())
    .handler(async (event: RelayEvent) => {
      if (event.rawBody) seen.push(event.rawBody);
      return { statusCode: 204, body: '' };
    });
  return { handler, seen };
};

const run = async (event: RelayEvent, options: Partial<VerifySignatureOptions> = {}) =>
  parseResult(await build(options).handler(event, lambdaContext()));

describe('Middleware: verifySignature', () => {
  const body = '{"gpu_type":"RTX 4090"}';

  it('passes a correctly signed body', async () => {
    // Act
    const result = await run(apiEvent({ body, headers: { 'x-webhook-signature': sign(SECRET, body) } }));
    // Assess
    expect(result.statusCode).toBe(204);
  });

  it('returns 401 Missing signature when the header is absent', async () => {
    const result = await run(apiEvent({ body }));
    expect(result).toMatchObject({ statusCode: 401, body: { error: 'Missing signature' } });
    expect(result.headers['Content-Type']).toBe('application/json');
  });

  it('returns 401 Missing signature when the header is empty', async () => {
    const result = await run(apiEvent({ body, headers: { 'x-webhook-signature': '' } }));
    expect(result).toMatchObject({ statusCode: 401, body: { error: 'Missing signature' } });
  });

  it('returns 401 Invalid signature when the body changed after signing', async () => {
    const result = await run(
      apiEvent({ body: '{"gpu_type":"A100"}', headers: { 'x-webhook-signature': sign(SECRET, body) } }),
    );
    expect(result).toMatchObject({ statusCode: 401, body: { error: 'Invalid signature' } });
  });

  it('returns 401 Invalid signature for a signature made with another secret', async () => {
    const result = await run(apiEvent({ body, headers: { 'x-webhook-signature': sign('other', body) } }));
    expect(result).toMatchObject({ statusCode: 401, body: { error: 'Invalid signature' } });
  });

  it('returns 401 Invalid signature for a non-hex or truncated signature', async () => {
    for (const bad of [
      'zz',
      sign(SECRET, body).slice(0, 63),
      `${sign(SECRET, body)}00`,
      `sha256=${sign(SECRET, body)}`,
    ]) {
      const result = await run(apiEvent({ body, headers: { 'x-webhook-signature': bad } }));
      expect(result).toMatchObject({ statusCode: 401, body: { error: 'Invalid signature' } });
    }
  });

  it.each([['X-Webhook-Signature'], ['x-webhook-signature'], ['X-WEBHOOK-SIGNATURE']])(
    'finds the header spelled %s',
    async (name) => {
      const event = apiEvent({ body });
      event.headers = { [name]: sign(SECRET, body) };
      expect((await run(event)).statusCode).toBe(204);
    },
  );

  it('accepts an uppercase hex signature (hex is case-insensitive)', async () => {
    const result = await run(apiEvent({ body, headers: { 'x-webhook-signature': sign(SECRET, body).toUpperCase() } }));
    expect(result.statusCode).toBe(204);
  });

  it('verifies the decoded bytes of a base64-encoded body', async () => {
    // Prepare: API Gateway base64-encodes bodies it does not treat as text
    const bytes = Buffer.from('{"gpu_type":"RTX 4090","note":"\u00e9\u2603"}', 'utf8');
    const event = apiEvent({
      body: bytes,
      headers: { 'content-type': 'application/octet-stream', 'x-webhook-signature': sign(SECRET, bytes) },
    });
    // Act
    const { handler, seen } = build();
    const result = parseResult(await handler(event, lambdaContext()));
    // Assess
    expect(result.statusCode).toBe(204);
    expect(seen[0].equals(bytes)).toBe(true);
  });

  it('rejects a signature over the base64 text instead of the bytes', async () => {
    const bytes = Buffer.from(body);
    const event = apiEvent({ body: bytes, headers: { 'x-webhook-signature': sign(SECRET, bytes.toString('base64')) } });
    expect((await run(event)).body).toEqual({ error: 'Invalid signature' });
  });

  it('verifies an empty body', async () => {
    expect((await run(apiEvent({ headers: { 'x-webhook-signature': sign(SECRET, '') } }))).statusCode).toBe(204);
    expect((await run(apiEvent({ headers: { 'x-webhook-signature': sign(SECRET, 'x') } }))).statusCode).toBe(401);
  });

  describe('secret rotation', () => {
    it('accepts the previous secret while it is configured', async () => {
      const event = apiEvent({ body, headers: { 'x-webhook-signature': sign(PREVIOUS, body) } });
      expect((await run(event, { secrets: async () => [SECRET, PREVIOUS] })).statusCode).toBe(204);
    });

    it('rejects the previous secret once the rotation is over', async () => {
      const event = apiEvent({ body, headers: { 'x-webhook-signature': sign(PREVIOUS, body) } });
      expect((await run(event, { secrets: async () => [SECRET] })).statusCode).toBe(401);
    });

    it('refuses everything with 401 when no secret is configured', async () => {
      const event = apiEvent({ body, headers: { 'x-webhook-signature': sign('', body) } });
      expect(await run(event, { secrets: async () => [] })).toMatchObject({
        statusCode: 401,
        body: { error: 'Invalid signature' },
      });
    });

    it('returns 503 without details when the secret cannot be read', async () => {
      const event = apiEvent({ body, headers: { 'x-webhook-signature': sign(SECRET, body) } });
      const result = await run(event, {
        secrets: async () => {
          throw new Error('AccessDenied arn:aws:secretsmanager:xyz');
        },
      });
      expect(result.statusCode).toBe(503);
      expect(JSON.stringify(result.body)).not.toContain('arn:');
    });
  });

  describe('replay window (X-Webhook-Timestamp)', () => {
    it('accepts a fresh timestamp when the signature covers <timestamp>.<body>', async () => {
      const event = apiEvent({
        body,
        headers: { 'x-webhook-signature': sign(SECRET, body, TS), 'x-webhook-timestamp': TS },
      });
      expect((await run(event)).statusCode).toBe(204);
    });

    it('rejects a timestamped request whose signature covers only the body', async () => {
      const event = apiEvent({
        body,
        headers: { 'x-webhook-signature': sign(SECRET, body), 'x-webhook-timestamp': TS },
      });
      expect((await run(event)).body).toEqual({ error: 'Invalid signature' });
    });

    it.each([[301], [-301], [3600]])(
      'rejects a timestamp %i s off with 401 Stale or invalid timestamp',
      async (offset) => {
        const ts = String(NOW / 1000 + offset);
        const event = apiEvent({
          body,
          headers: { 'x-webhook-signature': sign(SECRET, body, ts), 'x-webhook-timestamp': ts },
        });
        expect(await run(event)).toMatchObject({ statusCode: 401, body: { error: 'Stale or invalid timestamp' } });
      },
    );

    it.each([[300], [-300], [0]])('accepts a timestamp %i s off (inside the window)', async (offset) => {
      const ts = String(NOW / 1000 + offset);
      const event = apiEvent({
        body,
        headers: { 'x-webhook-signature': sign(SECRET, body, ts), 'x-webhook-timestamp': ts },
      });
      expect((await run(event)).statusCode).toBe(204);
    });

    it.each([['abc'], ['1.7e9'], ['-5'], ['1700000000.5']])('rejects the malformed timestamp %s', async (ts) => {
      const event = apiEvent({
        body,
        headers: { 'x-webhook-signature': sign(SECRET, body, ts), 'X-Webhook-Timestamp': ts },
      });
      expect(await run(event)).toMatchObject({ statusCode: 401, body: { error: 'Stale or invalid timestamp' } });
    });

    it('returns 401 Missing timestamp when timestamps are required and absent', async () => {
      const event = apiEvent({ body, headers: { 'x-webhook-signature': sign(SECRET, body) } });
      expect(await run(event, { requireTimestamp: true })).toMatchObject({
        statusCode: 401,
        body: { error: 'Missing timestamp' },
      });
    });

    it('accepts a required timestamp that is present and fresh', async () => {
      const event = apiEvent({
        body,
        headers: { 'x-webhook-signature': sign(SECRET, body, TS), 'x-webhook-timestamp': TS },
      });
      expect((await run(event, { requireTimestamp: () => true })).statusCode).toBe(204);
    });
  });

  describe('bodiless signed GET (covers path)', () => {
    const path = '/webhook/tasks/6f1c0d9e-1111-4222-8333-444455556666';

    it('signs the path', async () => {
      const event = apiEvent({ method: 'GET', path, headers: { 'x-webhook-signature': sign(SECRET, path) } });
      expect((await run(event, { covers: 'path' })).statusCode).toBe(204);
    });

    it('signs the path with its query string', async () => {
      const event = apiEvent({
        method: 'GET',
        path,
        rawQueryString: 'a=1',
        headers: { 'x-webhook-signature': sign(SECRET, `${path}?a=1`) },
      });
      expect(signedPath(event)).toBe(`${path}?a=1`);
      expect((await run(event, { covers: 'path' })).statusCode).toBe(204);
      const unsignedQuery = apiEvent({
        method: 'GET',
        path,
        rawQueryString: 'a=1',
        headers: { 'x-webhook-signature': sign(SECRET, path) },
      });
      expect((await run(unsignedQuery, { covers: 'path' })).statusCode).toBe(401);
    });

    it('signs <timestamp>.<path> when timestamped', async () => {
      const event = apiEvent({
        method: 'GET',
        path,
        headers: { 'x-webhook-signature': sign(SECRET, path, TS), 'x-webhook-timestamp': TS },
      });
      expect((await run(event, { covers: 'path' })).statusCode).toBe(204);
    });

    it('rejects a signature for another task id', async () => {
      const other = '/webhook/tasks/00000000-0000-4000-8000-000000000000';
      const event = apiEvent({ method: 'GET', path, headers: { 'x-webhook-signature': sign(SECRET, other) } });
      expect((await run(event, { covers: 'path' })).statusCode).toBe(401);
    });
  });
});

describe('Middleware: verifySignature, signature v2 (issue 29)', () => {
  const body = '{"order_id":7,"hours":2}';
  const path = '/webhook/extend-order';

  it('passes a v2 signature over method, path and body with its timestamp', async () => {
    expect((await run(apiEvent({ path, body, headers: v2Headers(SECRET, 'POST', path, body, TS) }))).statusCode).toBe(
      204,
    );
  });

  it('passes a v2-signed GET over its path with the query string and an empty body', async () => {
    const event = apiEvent({
      method: 'GET',
      path: '/webhook/spend',
      rawQueryString: 'from=2026-11-01',
      headers: v2Headers(SECRET, 'GET', '/webhook/spend?from=2026-11-01', '', TS),
    });
    expect((await run(event)).statusCode).toBe(204);
  });

  it.each([
    ['another path', { path: '/webhook/cancel-order' }],
    ['another method', { method: 'GET' as const }],
    ['another body', { body: '{"order_id":8,"hours":2}' }],
    ['another query', { rawQueryString: 'x=1' }],
  ])('refuses the same v2 signature sent with %s: 401 Invalid signature', async (_what, change) => {
    const event = apiEvent({ path, body, headers: v2Headers(SECRET, 'POST', path, body, TS), ...change });
    expect(await run(event)).toMatchObject({ statusCode: 401, body: { error: 'Invalid signature' } });
  });

  it('requires X-Webhook-Timestamp with v2 (401 Missing timestamp), and a fresh one', async () => {
    const missing = apiEvent({
      path,
      body,
      headers: { 'x-webhook-signature': signV2(SECRET, 'POST', path, body, TS) },
    });
    expect(await run(missing)).toMatchObject({ statusCode: 401, body: { error: 'Missing timestamp' } });
    const old = String(NOW / 1000 - 301);
    const stale = apiEvent({ path, body, headers: v2Headers(SECRET, 'POST', path, body, old) });
    expect(await run(stale)).toMatchObject({ statusCode: 401, body: { error: 'Stale or invalid timestamp' } });
  });

  it('refuses a valid v1 signature where only v2 is accepted with `signature v2 required for this route`; a wrong one with `Invalid signature`', async () => {
    const v1 = apiEvent({ path, body, headers: { 'x-webhook-signature': sign(SECRET, body) } });
    expect(await run(v1, { versions: () => 'v2' })).toMatchObject({
      statusCode: 401,
      body: { error: 'signature v2 required for this route' },
    });
    expect(await run(v1, { requireV2: true })).toMatchObject({
      statusCode: 401,
      body: { error: 'signature v2 required for this route' },
    });
    expect((await run(v1, { versions: () => 'v1,v2' })).statusCode).toBe(204);
    const wrong = apiEvent({ path, body, headers: { 'x-webhook-signature': sign('other', body) } });
    expect(await run(wrong, { versions: () => 'v2' })).toMatchObject({
      statusCode: 401,
      body: { error: 'Invalid signature' },
    });
  });

  it('refuses a v1 signature that names a caller key, whatever SIGNATURE_VERSIONS says', async () => {
    const callerKeys = async () => ({ caller: { key: 'ci', scopes: ['read' as const] }, secret: 'ci-secret' });
    const v1 = apiEvent({
      path,
      body,
      headers: { 'x-webhook-signature': sign('ci-secret', body), 'x-webhook-key-id': 'ci' },
    });
    expect(await run(v1, { callerKeys, versions: () => 'v1,v2' })).toMatchObject({
      statusCode: 401,
      body: { error: 'signature v2 required for this route' },
    });
    const v2 = apiEvent({
      path,
      body,
      headers: { ...v2Headers('ci-secret', 'POST', path, body, TS), 'x-webhook-key-id': 'ci' },
    });
    expect((await run(v2, { callerKeys })).statusCode).toBe(204);
  });
});
