/** Fills the rate limit into the generated OpenAPI document (see ./openapi-asset.ts); no zod here. */
export const RATE_LIMIT_PLACEHOLDER_TEXT = '987654321';

export const renderOpenApi = (document: unknown, requestsPerMinute: number): string =>
  JSON.stringify(document).split(RATE_LIMIT_PLACEHOLDER_TEXT).join(String(requestsPerMinute));
