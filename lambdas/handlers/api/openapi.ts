/**
 * GET /openapi.json: the OpenAPI 3.1 document, generated at build time from the route table and the
 * request schemas (lambdas/http/openapi.json, `npm run openapi`) and served as it is, with the
 * configured rate limit filled in. Like /health, without the shared chain: no zod, no Powertools
 * (BENCHMARKS.md "Cold start budget": 309 → ~29 KB). The bundle carries the document Brotli-compressed
 * (lambdas/http/openapi-brotli.ts; 62.5 → ~17 KB, issue 32), inflated once per instance.
 */
import { brotliDecompressSync } from 'node:zlib';
import middy from '@middy/core';
import { SETTINGS } from '../../../contract/settings';
import { OPENAPI_DOCUMENT_BROTLI_BASE64 } from '../../http/openapi-brotli';
import { renderOpenApiText } from '../../http/render-openapi';
import type { ApiResult, RelayEvent } from '../../middleware/http';
import type { ApiHandler } from './chain';

/** MAX_REQUESTS_PER_MINUTE as the env contract reads it, with the contract's default when unset. */
const perMinuteOf = (raw: string | undefined): number => {
  const n = Number(raw);
  return raw !== undefined && raw !== '' && Number.isInteger(n) && n > 0 ? n : SETTINGS.maxRequestsPerMinute.default;
};

/** The handler for a given rate limit (tests); `handler` reads MAX_REQUESTS_PER_MINUTE. */
export const createOpenApiHandler = (
  deps: () => { readonly env: { readonly MAX_REQUESTS_PER_MINUTE: number } },
): ApiHandler => {
  let body: string | undefined;
  return middy<RelayEvent, ApiResult>().handler(async () => {
    body ??= renderOpenApiText(
      brotliDecompressSync(Buffer.from(OPENAPI_DOCUMENT_BROTLI_BASE64, 'base64')).toString('utf8'),
      deps().env.MAX_REQUESTS_PER_MINUTE,
    );
    return { statusCode: 200, headers: { 'Content-Type': 'application/json' }, body };
  });
};

export const handler = createOpenApiHandler(() => ({
  env: { MAX_REQUESTS_PER_MINUTE: perMinuteOf(process.env.MAX_REQUESTS_PER_MINUTE) },
}));
