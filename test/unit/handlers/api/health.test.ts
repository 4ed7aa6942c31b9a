import { createHealthHandler, handler } from '../../../../lambdas/handlers/api/health';
import { apiEvent, lambdaContext } from '../../../fixtures/events/api-event';
import { parseResult } from '../../../helpers/parse-result';

describe('Handler: health', () => {
  it('returns 200 {"status":"ok"} as JSON', async () => {
    const result = parseResult(
      await createHealthHandler()(apiEvent({ method: 'GET', path: '/health' }), lambdaContext()),
    );
    expect(result).toEqual({
      statusCode: 200,
      headers: { 'Content-Type': 'application/json' },
      body: { status: 'ok' },
    });
  });

  it('works as the exported handler without any environment', async () => {
    expect(parseResult(await handler(apiEvent({ method: 'GET', path: '/health' }), lambdaContext())).body).toEqual({
      status: 'ok',
    });
  });
});
