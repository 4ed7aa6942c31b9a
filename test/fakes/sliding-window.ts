/** The SlidingWindow port over the pure window math, in memory. */
import type { SlidingWindow } from '../../lambdas/domain/ports';
import { slideWindow, type WindowEvent } from '../../lambdas/domain/sliding-window';

export class FakeSlidingWindow implements SlidingWindow {
  public readonly events = new Map<string, readonly WindowEvent[]>();
  public readonly keysHit: string[] = [];
  public fail: Error | undefined;
  public async hit(key: string, opts: { now: number; windowMs: number; limit: number; eventId: string }) {
    if (this.fail) throw this.fail;
    this.keysHit.push(key);
    const outcome = slideWindow({ events: this.events.get(key) ?? [], ...opts });
    if (outcome.changed) this.events.set(key, outcome.events);
    return { allowed: outcome.allowed, retryAfterMs: outcome.retryAfterMs, count: outcome.count };
  }
}
