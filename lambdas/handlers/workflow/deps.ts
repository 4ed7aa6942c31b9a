/**
 * The workflow tasks' dependencies, each built once per Lambda instance on first use. Lazy and per
 * port, so a module import (tests, local runtime) reads no environment, and a function only builds
 * the adapters it uses (ReserveQuota never needs the marketplace key). The notifier lives in
 * ./notifier-deps.ts: only ReportResult and ExecutionEnded deliver results, so only their bundles
 * carry the HTTP transport and SSRF guard.
 */
import type { MarketplaceClient, ServerClaims, SlidingWindow, TaskRepository } from '../../domain/ports';
import { relayEnv } from '../../adapters/env';
import { serverClaimsFromEnv, slidingWindowFromEnv, taskRepositoryFromEnv } from '../../adapters/from-env';
import { marketplaceFromEnv } from '../../adapters/marketplace-from-env';

/** One value built on first call; a failed build is retried on the next call. */
export const once = <T>(make: () => T | Promise<T>): (() => Promise<T>) => {
  let value: Promise<T> | undefined;
  return () => {
    value ??= Promise.resolve().then(make).catch((error: unknown) => {
      value = undefined;
      throw error;
    });
    return value;
  };
};

/** The shared adapters, built on first use (also used by ./notifier-deps.ts). */
export const marketplace = once<MarketplaceClient>(() => marketplaceFromEnv(relayEnv()));
export const tasks = once<TaskRepository>(() => taskRepositoryFromEnv(relayEnv()));
export const quota = once<SlidingWindow>(() => slidingWindowFromEnv(relayEnv()));
export const claims = once<ServerClaims>(() => serverClaimsFromEnv(relayEnv()));

export const findServerDeps = async () => ({ marketplace: await marketplace(), claims: await claims(), tasks: await tasks() });
export const reserveQuotaDeps = async () => ({ quota: await quota(), maxOrdersPerHour: relayEnv().MAX_ORDERS_PER_HOUR });
export const placeOrderDeps = async () => ({ marketplace: await marketplace(), tasks: await tasks(), claims: await claims() });
export const checkOrderDeps = async () => ({ marketplace: await marketplace() });
export const cancelOrderDeps = async () => ({ marketplace: await marketplace(), tasks: await tasks() });
