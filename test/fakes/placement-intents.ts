/** The PlacementIntents port in memory. */
import type { PlacementIntent, PlacementIntents } from '../../lambdas/domain/ports';

const keyOf = (i: PlacementIntent): string => `${i.task_id}_${i.server_id}_${i.at}`;

export class FakePlacementIntents implements PlacementIntents {
  public readonly open_ = new Map<string, PlacementIntent>();
  public readonly owners = new Map<number, string>();

  public async open(intent: PlacementIntent): Promise<void> {
    this.open_.set(keyOf(intent), intent);
  }
  public async close(intent: PlacementIntent): Promise<void> {
    this.open_.delete(keyOf(intent));
  }
  public async list(): Promise<readonly PlacementIntent[]> {
    return [...this.open_.values()].sort((a, b) => a.at - b.at);
  }
  public async claimOrder(orderId: number, owner: string, _now?: number): Promise<boolean> {
    const holder = this.owners.get(orderId);
    if (holder !== undefined && holder !== owner) return false;
    this.owners.set(orderId, owner);
    return true;
  }
}

/**
 * What PlaceOrder needs beyond its ports, on the real clock: `intents` (in memory unless given) and a
 * short visibility window, so a test whose order never shows waits `visibleTimeoutMs`, not a minute.
 */
export const placementWaits = (intents: PlacementIntents = new FakePlacementIntents(), visibleTimeoutMs = 2_000) => ({
  intents,
  visibleTimeoutMs,
  clock: Date.now,
  sleep: (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms)),
});
