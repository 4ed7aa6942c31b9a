/** GET /webhook/marketplace: unsigned, rate limited; the §4.1 summary of the marketplace listing. */
import { MarketplaceError } from '../../domain/errors';
import { summarizeMarketplace } from '../../domain/marketplace-summary';
import type { MarketplaceClient } from '../../domain/ports';
import { logger } from '../../adapters/observability';
import { httpError, jsonResponse, type ApiResult } from '../../middleware/http';
import { apiHandler, type ApiHandler, type ChainDeps } from './chain';
import { marketplaceDepsFromEnv } from './deps';

export interface MarketplaceSummaryDeps extends ChainDeps {
  readonly marketplace: MarketplaceClient;
}

/**
 * A short, safe reason: the marketplace client's own error texts (they name the failure class,
 * never the key); anything else is not echoed (it could carry internals).
 */
const shortReason = (error: unknown): string =>
  error instanceof MarketplaceError && error.message ? error.message.slice(0, 200) : 'unexpected error';

const getMarketplaceSummary = async (_event: unknown, deps: MarketplaceSummaryDeps): Promise<ApiResult> => {
  let servers;
  try {
    servers = await deps.marketplace.listServers();
  } catch (error) {
    logger.error('marketplace listing failed', { error });
    // The spec's answer to an internal failure here is a 500 with an error text.
    throw httpError(500, `Marketplace unavailable: ${shortReason(error)}`);
  }
  // The marketplace's fees as budgets reserve them (issue 31 §6): RENTER_FEE_PERCENT, ORDER_CREATION_FEE_USD.
  const fees = { renter_fee_percent: deps.env.RENTER_FEE_PERCENT, creation_fee_usd: deps.env.ORDER_CREATION_FEE_USD };
  return jsonResponse(200, summarizeMarketplace(servers, fees));
};

/** The handler with injected deps (tests); `handler` wires the real adapters. */
export const createMarketplaceSummaryHandler = (deps: () => MarketplaceSummaryDeps): ApiHandler =>
  apiHandler({ routeId: 'MarketplaceSummary', deps }, getMarketplaceSummary);

export const handler = createMarketplaceSummaryHandler(marketplaceDepsFromEnv());
