/** Fills the rate limit into the generated OpenAPI document (see ./openapi-asset.ts); no zod here. */
export const RATE_LIMIT_PLACEHOLDER_TEXT = '987654321';

/** The document as compact JSON text (lambdas/http/openapi-brotli.ts inflated), rate limit filled in. */
export const renderOpenApiText = (compactJson: string, requestsPerMinute: number): string =>
  compactJson.split(RATE_LIMIT_PLACEHOLDER_TEXT).join(String(requestsPerMinute));

export const renderOpenApi = (document: unknown, requestsPerMinute: number): string =>
  renderOpenApiText(JSON.stringify(document), requestsPerMinute);
