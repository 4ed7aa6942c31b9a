import { createOpenApiHandler } from '../../../../lambdas/handlers/api/openapi';
import { apiEvent, lambdaContext } from '../../../fixtures/events/api-event';
import { apiEnv } from '../../../fakes/env';
import { parseResult } from '../../../helpers/parse-result';

describe('Handler: openapi', () => {
  it('serves the OpenAPI document as JSON, with every signed route', async () => {
    const handler = createOpenApiHandler(() => ({ env: apiEnv({ MAX_REQUESTS_PER_MINUTE: '42' }) }));
    const result = parseResult(await handler(apiEvent({ method: 'GET', path: '/openapi.json' }), lambdaContext()));
    expect(result.statusCode).toBe(200);
    expect(result.headers['Content-Type']).toBe('application/json');
    expect(String(result.body.openapi)).toMatch(/^3\.1/);
    expect(Object.keys(result.body.paths as object)).toEqual(
      expect.arrayContaining(['/webhook/create-order', '/webhook/tasks/{task_id}', '/slack/command']),
    );
  });
});
