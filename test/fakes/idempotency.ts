/** The IdempotencyStore port in memory: the first unexpired claim of a key wins. */
import type { IdempotencyStore } from '../../lambdas/domain/ports';

export class FakeIdempotencyStore implements IdempotencyStore {
  public readonly keys = new Map<string, { taskId: string; expiresAt: number }>();
  public readonly released: string[] = [];
  public async claim(key: string, taskId: string, now: number, ttlSeconds: number): Promise<string> {
    const bound = this.keys.get(key);
    if (bound && bound.expiresAt > now) return bound.taskId;
    this.keys.set(key, { taskId, expiresAt: now + ttlSeconds * 1000 });
    return taskId;
  }
  public async release(key: string, taskId: string): Promise<void> {
    if (this.keys.get(key)?.taskId === taskId) {
      this.keys.delete(key);
      this.released.push(key);
    }
  }
}
