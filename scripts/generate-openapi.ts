/**
 * `npm run openapi`: writes lambdas/http/openapi.json from the zod schemas, and its compressed copy
 * the function serves, lambdas/http/openapi-brotli.ts (commit both).
 */
import { writeFileSync } from 'node:fs';
import * as path from 'node:path';
import { openApiAssetText, openApiBrotliModuleText } from '../lambdas/http/openapi-asset';
import { MAX_BODY_BYTES } from '../lambdas/middleware/body';

const asset = openApiAssetText(MAX_BODY_BYTES);
writeFileSync(path.join(__dirname, '..', 'lambdas', 'http', 'openapi.json'), asset);
writeFileSync(path.join(__dirname, '..', 'lambdas', 'http', 'openapi-brotli.ts'), openApiBrotliModuleText(asset));
