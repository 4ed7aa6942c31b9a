import middy from '@middy/core';
import { decodeBody, MAX_BODY_BYTES } from '../../../lambdas/middleware/body';
import { errorHandler } from '../../../lambdas/middleware/error-handler';
import type { RelayEvent } from '../../../lambdas/middleware/http';
import { jsonBody } from '../../../lambdas/middleware/json-body';
import { apiEvent, lambdaContext } from '../../fixtures/events/api-event';
import { parseResult } from '../../helpers/parse-result';

const build = (maxBytes?: number) =>
  middy<RelayEvent>()
    .use(decodeBody(maxBytes === undefined ? {} : { maxBytes }))
    .use(jsonBody())
    .use(errorHandler())
    .handler(async (event: RelayEvent) => ({
      statusCode: 200,
      body: JSON.stringify({ bytes: event.rawBody?.length, json: event.jsonBody }),
    }));

const run = async (event: RelayEvent, maxBytes?: number) => parseResult(await build(maxBytes)(event, lambdaContext()));

describe('Middleware: decodeBody', () => {
  it('accepts a body of exactly 64 KiB', async () => {
    const body = JSON.stringify({ pad: 'x'.repeat(MAX_BODY_BYTES - 10) });
    expect(Buffer.byteLength(body)).toBe(MAX_BODY_BYTES);
    const result = await run(apiEvent({ body }));
    expect(result.statusCode).toBe(200);
    expect(result.body.bytes).toBe(MAX_BODY_BYTES);
  });

  it('returns 413 for a body one byte over 64 KiB', async () => {
    const body = JSON.stringify({ pad: 'x'.repeat(MAX_BODY_BYTES - 9) });
    const result = await run(apiEvent({ body }));
    expect(result).toMatchObject({ statusCode: 413, body: { error: 'Request body too large (max 65536 bytes)' } });
  });

  it('counts UTF-8 bytes, not characters', async () => {
    const body = JSON.stringify({ pad: '\u00e9'.repeat(MAX_BODY_BYTES / 2) }); // 2 bytes each
    expect(body.length).toBeLessThan(MAX_BODY_BYTES);
    expect((await run(apiEvent({ body }))).statusCode).toBe(413);
  });

  it('returns 413 for an oversized base64-encoded body', async () => {
    const bytes = Buffer.alloc(MAX_BODY_BYTES + 1, 0x20);
    expect((await run(apiEvent({ body: bytes }))).statusCode).toBe(413);
  });

  it('decodes a base64-encoded body to its bytes', async () => {
    const result = await run(apiEvent({ body: Buffer.from('{"a":1}') }));
    expect(result.body).toEqual({ bytes: 7, json: { a: 1 } });
  });

  it('honours a smaller configured limit', async () => {
    expect((await run(apiEvent({ body: '{"a":"123456"}' }), 8)).body).toEqual({
      error: 'Request body too large (max 8 bytes)',
    });
  });
});

describe('Middleware: jsonBody', () => {
  it.each([['{'], ['{"a":'], ['not json'], ["{'a':1}"]])('returns 400 Invalid JSON body for %s', async (body) => {
    expect(await run(apiEvent({ body }))).toMatchObject({ statusCode: 400, body: { error: 'Invalid JSON body' } });
  });

  it.each([['[]'], ['"text"'], ['42'], ['null'], ['true']])('returns 400 for the non-object JSON %s', async (body) => {
    expect(await run(apiEvent({ body }))).toMatchObject({
      statusCode: 400,
      body: { error: 'JSON body must be an object' },
    });
  });

  it('treats an absent or blank body as an empty object', async () => {
    expect((await run(apiEvent({}))).body).toEqual({ bytes: 0, json: {} });
    expect((await run(apiEvent({ body: '  \n' }))).body.json).toEqual({});
  });

  it('ignores a UTF-8 byte order mark', async () => {
    expect((await run(apiEvent({ body: '\uFEFF{"a":2}' }))).body.json).toEqual({ a: 2 });
  });

  it('parses a base64-encoded JSON body', async () => {
    expect((await run(apiEvent({ body: '{"gpu_type":"A100"}', base64: true }))).body.json).toEqual({
      gpu_type: 'A100',
    });
  });
});
