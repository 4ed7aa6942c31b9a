/**
 * The port behind shared marketplace reads (DESIGN.md "Marketplace reads are shared"), and an
 * in-memory implementation for tests and single-process use. DynamoDbReadCache shares entries
 * across Lambda instances.
 */

export interface ReadCache {
  /** The value stored under `name` if it was read at most `maxAgeMs` before `now`, else undefined. */
  get(name: string, maxAgeMs: number, now: number): Promise<unknown | undefined>;
  /**
   * Stores `value` as read at `now` (the time the read started). Ignored when a newer value or an
   * invalidation is already stored, so a slow read never overwrites fresher knowledge.
   */
  put(name: string, value: unknown, now: number, ttlSeconds: number): Promise<void>;
  /** Marks `name` stale as of `now`; reads that started before `now` can no longer be stored. */
  invalidate(name: string, now: number): Promise<void>;
}

interface Entry {
  readonly at: number;
  readonly json?: string;
}

/** Process-local ReadCache; values are stored as JSON so callers never share mutable objects. */
export class InMemoryReadCache implements ReadCache {
  private readonly entries = new Map<string, Entry>();

  public async get(name: string, maxAgeMs: number, now: number): Promise<unknown | undefined> {
    const entry = this.entries.get(name);
    if (!entry?.json || now - entry.at > maxAgeMs) return undefined;
    return JSON.parse(entry.json) as unknown;
  }

  public async put(name: string, value: unknown, now: number): Promise<void> {
    const entry = this.entries.get(name);
    // An invalidation at the very millisecond a read started may postdate the read: it wins.
    if (entry && (entry.json === undefined ? entry.at >= now : entry.at > now)) return;
    this.entries.set(name, { at: now, json: JSON.stringify(value) });
  }

  public async invalidate(name: string, now: number): Promise<void> {
    this.entries.set(name, { at: now });
  }
}
