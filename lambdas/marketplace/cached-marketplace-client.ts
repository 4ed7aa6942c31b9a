/**
 * Shared marketplace reads (DESIGN.md): a `marketplace` or active `my_orders` answer younger than
 * the poll interval serves every caller, so N concurrent tasks cost about one paced read per
 * interval instead of N, and the 1 req/s limit does not starve anyone's readiness window.
 */
import type { CreateOrderRequest, Order, Server, Wallet } from '../domain/marketplace-types';
import type { MarketplaceClient } from '../domain/ports';
import type { ReadCache } from './read-cache';

/**
 * Cache entry names (the DynamoDB adapter keys them with keys.cache(name)). An entry holds domain objects, so a name changes with their shape: `-v2` since
 * `Server.price.usd` became `usd_per_hour`, so during a deploy neither version reads the other's entries.
 */
export const CACHE_NAMES = { servers: 'marketplace-v2', activeOrders: 'my_orders' } as const;

export interface CachedMarketplaceClientOptions {
  readonly inner: MarketplaceClient;
  readonly cache: ReadCache;
  /** Oldest answer still served; the readiness poll interval. */
  readonly maxAgeMs: number;
  /** @default Date.now */
  readonly now?: () => number;
  /** Called when the cache fails; reads then go to the marketplace. */
  readonly onCacheError?: (error: unknown) => void;
}

/** Caches listServers and listOrders (active only); everything else passes through. */
export class CachedMarketplaceClient implements MarketplaceClient {
  private readonly now: () => number;
  private readonly ttlSeconds: number;
  /** Concurrent misses in one instance share one call. */
  private readonly inFlight = new Map<string, Promise<unknown>>();

  public constructor(private readonly options: CachedMarketplaceClientOptions) {
    this.now = options.now ?? Date.now;
    // Long enough to serve maxAgeMs; DynamoDB TTL is lazy, so get() checks the age itself anyway.
    this.ttlSeconds = Math.ceil(options.maxAgeMs / 1000) + 60;
  }

  public listServers(): Promise<readonly Server[]> {
    return this.cached(CACHE_NAMES.servers, () => this.options.inner.listServers());
  }

  public listWallets(): Promise<readonly Wallet[]> {
    return this.options.inner.listWallets();
  }

  public async createOrder(request: CreateOrderRequest): Promise<{ order_id: number | undefined }> {
    try {
      return await this.options.inner.createOrder(request);
    } finally {
      // Even a failed or unknown outcome may have added an order: the next poll must see it.
      await this.invalidateOrders();
    }
  }

  public listOrders(options: { returnCompleted?: boolean } = {}): Promise<readonly Order[]> {
    if (options.returnCompleted) return this.options.inner.listOrders(options);
    return this.cached(CACHE_NAMES.activeOrders, () => this.options.inner.listOrders());
  }

  public async cancelOrder(orderId: number): Promise<void> {
    try {
      await this.options.inner.cancelOrder(orderId);
    } finally {
      await this.invalidateOrders();
    }
  }

  public async setSpotPrice(orderId: number, desiredPrice: number): Promise<void> {
    try {
      await this.options.inner.setSpotPrice(orderId, desiredPrice);
    } finally {
      // The order's price changed: the next read must show it.
      await this.invalidateOrders();
    }
  }

  public spotMarket(serverId: number): Promise<unknown> {
    return this.options.inner.spotMarket(serverId);
  }

  private async invalidateOrders(): Promise<void> {
    // A read already in flight began before this write: later callers must not join it.
    this.inFlight.delete(CACHE_NAMES.activeOrders);
    try {
      await this.options.cache.invalidate(CACHE_NAMES.activeOrders, this.now());
    } catch (error) {
      this.options.onCacheError?.(error);
    }
  }

  private cached<T>(name: string, read: () => Promise<T>): Promise<T> {
    const pending = this.inFlight.get(name);
    if (pending) return pending as Promise<T>;
    const promise = this.readThrough(name, read).finally(() => this.inFlight.delete(name));
    this.inFlight.set(name, promise);
    return promise;
  }

  private async readThrough<T>(name: string, read: () => Promise<T>): Promise<T> {
    const startedAt = this.now();
    try {
      const hit = await this.options.cache.get(name, this.options.maxAgeMs, startedAt);
      if (hit !== undefined) return hit as T;
    } catch (error) {
      this.options.onCacheError?.(error);
    }
    const value = await read();
    try {
      // Stamped with the start time: an invalidation during the read wins over this answer.
      await this.options.cache.put(name, value, startedAt, this.ttlSeconds);
    } catch (error) {
      this.options.onCacheError?.(error);
    }
    return value;
  }
}
