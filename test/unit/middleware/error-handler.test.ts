import middy from '@middy/core';
import { createError } from '@middy/util';
import { HandOffError } from '../../../lambdas/domain/errors';
import { errorHandler } from '../../../lambdas/middleware/error-handler';
import { httpError } from '../../../lambdas/middleware/http';
import { apiEvent, lambdaContext } from '../../fixtures/events/api-event';
import { parseResult } from '../../helpers/parse-result';

const throwing = (error: unknown) =>
  middy()
    .use(errorHandler())
    .handler(async () => {
      throw error;
    });

const run = async (error: unknown) => parseResult(await throwing(error)(apiEvent(), lambdaContext()));

describe('Middleware: errorHandler', () => {
  it('turns an unexpected error into 500 Internal error without details', async () => {
    const result = await run(new TypeError('Cannot read properties of undefined (secret=abc)'));
    expect(result).toEqual({
      statusCode: 500,
      headers: { 'Content-Type': 'application/json' },
      body: { error: 'Internal error' },
    });
  });

  it('keeps a JSON http error as it is, with its headers', async () => {
    const result = await run(httpError(429, 'Rate limit exceeded', { 'Retry-After': '3' }));
    expect(result).toMatchObject({
      statusCode: 429,
      body: { error: 'Rate limit exceeded' },
      headers: { 'Retry-After': '3', 'Content-Type': 'application/json' },
    });
  });

  it('wraps a plain-text 4xx message into {error}', async () => {
    const result = await run(createError(404, 'nope'));
    expect(result).toMatchObject({ statusCode: 404, body: { error: 'nope' } });
    expect(result.headers['Content-Type']).toBe('application/json');
  });

  it('hides the message of a non-exposed 5xx http error', async () => {
    expect(await run(createError(502, 'upstream said: key=abc'))).toMatchObject({
      statusCode: 500,
      body: { error: 'Internal error' },
    });
  });

  it('maps HandOffError to 503 with the retry text', async () => {
    const result = await run(new HandOffError({ cause: new Error('SFN down') }));
    expect(result).toMatchObject({
      statusCode: 503,
      body: { error: 'Could not queue the task; nothing was started. Retry later.' },
    });
  });

  it('handles a thrown non-Error value', async () => {
    expect(await run('boom')).toMatchObject({ statusCode: 500, body: { error: 'Internal error' } });
  });
});
