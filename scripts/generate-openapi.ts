/** `npm run openapi`: writes lambdas/http/openapi.json from the zod schemas (commit the result). */
import { writeFileSync } from 'node:fs';
import * as path from 'node:path';
import { openApiAssetText } from '../lambdas/http/openapi-asset';
import { MAX_BODY_BYTES } from '../lambdas/middleware/body';

writeFileSync(path.join(__dirname, '..', 'lambdas', 'http', 'openapi.json'), openApiAssetText(MAX_BODY_BYTES));
