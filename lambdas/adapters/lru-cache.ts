/**
 * Stands in for `mnemonist/lru-cache` inside the Lambda bundles (esbuild alias in
 * lib/constructs/relay-bundling.ts). Its only user there is `@aws-sdk/endpoint-cache`, which the
 * DynamoDB client creates for endpoint discovery (off unless AWS_ENABLE_ENDPOINT_DISCOVERY is set, so
 * the cache stays empty); mnemonist and obliterator cost ~7 KB per bundle. This keeps the part of the
 * API EndpointCache calls (get, peek, has, set, clear, size), least-recently-used first out, on a Map.
 *
 * Only bundles see this module: jest, `npm start` and the CDK app import the real one.
 */
export default class LRUCache<K, V> {
  private readonly items = new Map<K, V>();

  public constructor(private readonly capacity: number) {}

  public get size(): number {
    return this.items.size;
  }

  /** The value, now the most recently used. */
  public get(key: K): V | undefined {
    if (!this.items.has(key)) return undefined;
    const value = this.items.get(key) as V;
    this.items.delete(key);
    this.items.set(key, value);
    return value;
  }

  /** The value, recency unchanged. */
  public peek(key: K): V | undefined {
    return this.items.get(key);
  }

  public has(key: K): boolean {
    return this.items.has(key);
  }

  /** Stores the value as the most recently used; the least recently used goes when full. */
  public set(key: K, value: V): this {
    this.items.delete(key);
    this.items.set(key, value);
    if (this.items.size > this.capacity) this.items.delete(this.items.keys().next().value as K);
    return this;
  }

  public clear(): void {
    this.items.clear();
  }
}
