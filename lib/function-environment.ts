/** The environment every relay function gets: table, marketplace and config values (env contract). */
import type { RelayConfig } from './config';

export const configEnvironment = (config: RelayConfig): Record<string, string> => ({
  MARKETPLACE_URL: config.marketplaceUrl,
  DEFAULT_IMAGE: config.defaultImage,
  DEFAULT_CURRENCY: config.defaultCurrency,
  DEFAULT_PORTS: JSON.stringify(config.defaultPorts),
  MAX_ORDERS_PER_HOUR: String(config.maxOrdersPerHour),
  MAX_REQUESTS_PER_MINUTE: String(config.maxRequestsPerMinute),
  ORDER_READY_TIMEOUT_SECONDS: String(config.orderReadyTimeoutSeconds),
  ORDER_POLL_INTERVAL_SECONDS: String(config.orderPollIntervalSeconds),
  ALLOW_PRIVATE_CALLBACKS: String(config.allowPrivateCallbacks),
  REQUIRE_WEBHOOK_TIMESTAMP: String(config.requireWebhookTimestamp),
  ALLOW_UNSIGNED_SLACK: String(config.allowUnsignedSlack),
});
