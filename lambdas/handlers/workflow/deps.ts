/**
 * The workflow tasks' dependencies, each built once per Lambda instance on first use. Lazy and per
 * port, so a module import (tests, local runtime) reads no environment, and a function only builds
 * the adapters it uses (ReserveQuota never needs the marketplace key).
 */
import type { MarketplaceClient, Notifier, ServerClaims, SlidingWindow, TaskRepository } from '../../domain/ports';
import { relayEnv } from '../../adapters/env';
import { serverClaimsFromEnv, slidingWindowFromEnv, taskRepositoryFromEnv } from '../../adapters/from-env';
import { marketplaceFromEnv } from '../../adapters/marketplace-from-env';
import { notifierFromEnv } from '../../adapters/notifier-from-env';

/** One value built on first call; a failed build is retried on the next call. */
const once = <T>(make: () => T | Promise<T>): (() => Promise<T>) => {
  let value: Promise<T> | undefined;
  return () => {
    value ??= Promise.resolve().then(make).catch((error: unknown) => {
      value = undefined;
      throw error;
    });
    return value;
  };
};

const marketplace = once<MarketplaceClient>(() => marketplaceFromEnv(relayEnv()));
const tasks = once<TaskRepository>(() => taskRepositoryFromEnv(relayEnv()));
const quota = once<SlidingWindow>(() => slidingWindowFromEnv(relayEnv()));
const claims = once<ServerClaims>(() => serverClaimsFromEnv(relayEnv()));
const notifier = once<Notifier>(() => notifierFromEnv(relayEnv()));

export const findServerDeps = async () => ({ marketplace: await marketplace(), claims: await claims(), tasks: await tasks() });
export const reserveQuotaDeps = async () => ({ quota: await quota(), maxOrdersPerHour: relayEnv().MAX_ORDERS_PER_HOUR });
export const placeOrderDeps = async () => ({ marketplace: await marketplace(), tasks: await tasks(), claims: await claims() });
export const checkOrderDeps = async () => ({ marketplace: await marketplace() });
export const cancelOrderDeps = async () => ({ marketplace: await marketplace(), tasks: await tasks() });
export const reportResultDeps = async () => ({ tasks: await tasks(), notifier: await notifier(), claims: await claims() });
export const executionEndedDeps = async () => ({
  marketplace: await marketplace(), tasks: await tasks(), notifier: await notifier(), claims: await claims(),
});
