/**
 * The OpenAPI document as a build-time asset (lambdas/http/openapi.json, written by
 * `npm run openapi` from buildOpenApiDocument), so GET /openapi.json serves it without zod or the
 * converter in its bundle. The one configuration-dependent figure, the rate limit, is generated as
 * RATE_LIMIT_PLACEHOLDER and filled in per function instance. test/unit/http/openapi-asset.test.ts
 * fails when the asset drifts from the schemas.
 */
import { buildOpenApiDocument } from './openapi-document';

/** Stands for MAX_REQUESTS_PER_MINUTE in the asset; no other number in the document looks like it. */
export const RATE_LIMIT_PLACEHOLDER = 987_654_321;

/** The asset's content: the document with the placeholder rate limit, pretty-printed for review. */
export const openApiAssetText = (maxBodyBytes: number): string =>
  `${JSON.stringify(buildOpenApiDocument({ requestsPerMinute: RATE_LIMIT_PLACEHOLDER, maxBodyBytes }), null, 2)}\n`;
