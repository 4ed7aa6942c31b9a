/**
 * GET /health: unsigned, not rate limited, touches nothing. Deliberately without the shared chain's
 * middlewares (logger, zod): a liveness probe should load and answer with the least code.
 */
import middy from '@middy/core';
import type { ApiHandler } from './chain';
import type { ApiResult, RelayEvent } from '../../middleware/http';

export const createHealthHandler = (): ApiHandler =>
  middy<RelayEvent, ApiResult>().handler(async () => ({
    statusCode: 200,
    headers: { 'Content-Type': 'application/json' },
    body: JSON.stringify({ status: 'ok' }),
  }));

export const handler = createHealthHandler();
