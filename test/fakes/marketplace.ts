/** The MarketplaceClient port in memory, with every hook the tests script. */
import type { CreateOrderRequest, Order, Server } from '../../lambdas/domain/marketplace-types';
import type { MarketplaceClient } from '../../lambdas/domain/ports';
import { aPlacedOrder } from './builders';
import { tick } from './tick';

export interface FakeMarketplaceOptions {
  /**
   * Yield to other promises before each call, so concurrent callers interleave (fleet-watch tests).
   * Off under jest fake timers, which hold `setImmediate`.
   * @default true
   */
  readonly interleave?: boolean;
  /**
   * Whether createOrder places orders; false makes it throw (the jobs never create orders).
   * @default true
   */
  readonly createsOrders?: boolean;
  /**
   * cancelOrder and setSpotPrice leave `orders` as the test set them (the jobs tests read a fixed list).
   * @default false - a cancel removes the order, a new spot price replaces its price
   */
  readonly fixedOrders?: boolean;
}

/**
 * A marketplace holding `servers` and `orders`. createOrder adds an order; cancelOrder removes one and
 * setSpotPrice changes its price (unless `fixedOrders`). `*Calls` and `created` record attempts, `cancelled` successes.
 */
export class FakeMarketplace implements MarketplaceClient {
  public servers: Server[] = [];
  public orders: Order[] = [];
  public readonly created: CreateOrderRequest[] = [];
  public listCalls = 0;
  public readonly listOrdersOptions: ({ returnCompleted?: boolean } | undefined)[] = [];
  public readonly cancelCalls: number[] = [];
  public readonly cancelled: number[] = [];
  public readonly spotPriceCalls: { order_id: number; price: number }[] = [];
  /** Scripted createOrder outcomes, consumed in order; default: a new order id from 100 up. */
  public createOutcomes: (() => Promise<{ order_id: number | undefined }>)[] = [];
  /** Errors thrown by the next calls of any method but createOrder, in order. */
  public failures: Error[] = [];
  /** When set, every call but createOrder waits on it (soft-deadline tests). */
  public hang?: Promise<never>;
  /** Thrown by every cancelOrder. */
  public cancelError?: Error;
  /** Thrown by cancelOrder of that order id. */
  public readonly cancelFailures = new Map<number, Error>();
  /** Thrown by every setSpotPrice. */
  public spotPriceFailure: Error | undefined;
  private nextId = 100;
  private readonly interleave: boolean;
  private readonly createsOrders: boolean;
  private readonly fixedOrders: boolean;

  public constructor(options: FakeMarketplaceOptions = {}) {
    this.interleave = options.interleave ?? true;
    this.createsOrders = options.createsOrders ?? true;
    this.fixedOrders = options.fixedOrders ?? false;
  }

  public async listServers(): Promise<readonly Server[]> {
    await this.gate();
    return this.servers;
  }

  public async listWallets() {
    await this.gate();
    return [];
  }

  public async createOrder(request: CreateOrderRequest): Promise<{ order_id: number | undefined }> {
    if (!this.createsOrders) throw new Error('jobs never create orders');
    this.created.push(request);
    const scripted = this.createOutcomes.shift();
    if (scripted) return scripted();
    const order_id = this.nextId++;
    this.orders.push(aPlacedOrder(order_id, request.renting_server, 1_000));
    return { order_id };
  }

  public async listOrders(options?: { returnCompleted?: boolean }): Promise<readonly Order[]> {
    await this.gate();
    this.listCalls += 1;
    this.listOrdersOptions.push(options);
    return this.orders.map((o) => ({ ...o }));
  }

  public async cancelOrder(orderId: number): Promise<void> {
    await this.gate();
    this.cancelCalls.push(orderId);
    const failure = this.cancelFailures.get(orderId) ?? this.cancelError;
    if (failure) throw failure;
    this.cancelled.push(orderId);
    if (!this.fixedOrders) this.orders = this.orders.filter((o) => o.order_id !== orderId);
  }

  public async setSpotPrice(orderId: number, desiredPrice: number): Promise<void> {
    await this.gate();
    this.spotPriceCalls.push({ order_id: orderId, price: desiredPrice });
    if (this.spotPriceFailure) throw this.spotPriceFailure;
    if (!this.fixedOrders)
      this.orders = this.orders.map((o) => (o.order_id === orderId ? { ...o, price: desiredPrice } : o));
  }

  public async spotMarket(): Promise<unknown> {
    await this.gate();
    return {};
  }

  /** Total listOrders, cancelOrder and setSpotPrice calls, the way the bench counts marketplace traffic. */
  public calls(): number {
    return this.listCalls + this.cancelCalls.length + this.spotPriceCalls.length;
  }

  private async gate(): Promise<void> {
    if (this.interleave) await tick();
    if (this.hang) await this.hang;
    const next = this.failures.shift();
    if (next) throw next;
  }
}
