/**
 * Pacing within one process (tests, benches, a single local runtime). The DynamoDB gate shares the
 * same slots across Lambda instances.
 */
import type { PacingGate } from '../domain/ports';

/** Hands out send times at least `intervalMs` apart per key, in call order. */
export class InMemoryPacingGate implements PacingGate {
  private readonly nextFree = new Map<string, number>();

  public async acquire(keyId: string, intervalMs: number, now: number): Promise<number> {
    const slot = Math.max(now, this.nextFree.get(keyId) ?? Number.NEGATIVE_INFINITY);
    this.nextFree.set(keyId, slot + intervalMs);
    return slot;
  }
}
