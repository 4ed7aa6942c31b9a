import { readFileSync } from 'node:fs';
import { brotliDecompressSync } from 'node:zlib';
import * as path from 'node:path';
import { buildOpenApiDocument } from '../../../lambdas/http/openapi-document';
import { openApiAssetText, RATE_LIMIT_PLACEHOLDER } from '../../../lambdas/http/openapi-asset';
import { OPENAPI_DOCUMENT_BROTLI_BASE64 } from '../../../lambdas/http/openapi-brotli';
import { RATE_LIMIT_PLACEHOLDER_TEXT, renderOpenApi } from '../../../lambdas/http/render-openapi';
import { MAX_BODY_BYTES } from '../../../lambdas/middleware/body';

const ASSET = path.join(__dirname, '..', '..', '..', 'lambdas', 'http', 'openapi.json');

describe('OpenAPI build-time asset', () => {
  it('is what the zod schemas generate now (else: npm run openapi, and commit the result)', () => {
    expect(readFileSync(ASSET, 'utf8')).toBe(openApiAssetText(MAX_BODY_BYTES));
  });

  it('is what the function serves, compressed: lambdas/http/openapi-brotli.ts inflates to it (else: npm run openapi)', () => {
    const served = brotliDecompressSync(Buffer.from(OPENAPI_DOCUMENT_BROTLI_BASE64, 'base64')).toString('utf8');
    expect(served).toBe(JSON.stringify(JSON.parse(readFileSync(ASSET, 'utf8'))));
  });

  it.each([1, 42, 60, 600])('rendered with %i requests/minute equals the document built at runtime', (perMinute) => {
    const asset = JSON.parse(readFileSync(ASSET, 'utf8')) as unknown;
    expect(JSON.parse(renderOpenApi(asset, perMinute))).toEqual(
      buildOpenApiDocument({ requestsPerMinute: perMinute, maxBodyBytes: MAX_BODY_BYTES }),
    );
  });

  it('has one placeholder text, the rate limit', () => {
    expect(String(RATE_LIMIT_PLACEHOLDER)).toBe(RATE_LIMIT_PLACEHOLDER_TEXT);
    expect(JSON.stringify(buildOpenApiDocument({ requestsPerMinute: 60, maxBodyBytes: MAX_BODY_BYTES }))).not.toContain(
      RATE_LIMIT_PLACEHOLDER_TEXT,
    );
  });
});
