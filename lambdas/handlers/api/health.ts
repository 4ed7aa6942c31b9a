/** GET /health: unsigned, not rate limited, touches nothing. */
import { jsonResponse, type ApiResult } from '../../middleware/http';
import { apiHandler, type ApiHandler, type ChainDeps } from './chain';

const getHealth = async (): Promise<ApiResult> => jsonResponse(200, { status: 'ok' });

/** Health needs no deps; the chain only reads them on rate-limited or signed routes. */
export const createHealthHandler = (): ApiHandler =>
  apiHandler({ routeId: 'Health', deps: () => ({}) as ChainDeps }, getHealth);

export const handler = createHealthHandler();
