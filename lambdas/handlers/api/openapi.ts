/** GET /openapi.json: the OpenAPI 3.1 document, generated from the route table and the request schemas. */
import { relayEnv } from '../../adapters/env';
import { buildOpenApiDocument } from '../../http/openapi-document';
import { MAX_BODY_BYTES } from '../../middleware/body';
import { jsonResponse, type ApiResult } from '../../middleware/http';
import { lazy } from '../../adapters/lazy';
import { apiHandler, type ApiHandler, type ChainDeps } from './chain';

/** The handler with injected deps (tests); `handler` reads the env contract. */
export const createOpenApiHandler = (deps: () => ChainDeps): ApiHandler => {
  // The document only depends on configuration: build it once per instance.
  const document = lazy(() => JSON.stringify(buildOpenApiDocument({ requestsPerMinute: deps().env.MAX_REQUESTS_PER_MINUTE, maxBodyBytes: MAX_BODY_BYTES })));
  const getOpenApi = async (): Promise<ApiResult> => ({ ...jsonResponse(200, null), body: document() });
  return apiHandler({ routeId: 'OpenApi', deps }, getOpenApi);
};

export const handler = createOpenApiHandler(lazy(() => ({ env: relayEnv() })));
