/** The ServerClaims port in memory: one holder per server. */
import type { ServerClaims } from '../../lambdas/domain/ports';

export class FakeClaims implements ServerClaims {
  public readonly holders = new Map<number, string>();
  public async claim(serverId: number, taskId: string): Promise<boolean> {
    const holder = this.holders.get(serverId);
    if (holder && holder !== taskId) return false;
    this.holders.set(serverId, taskId);
    return true;
  }
  public async release(serverId: number, taskId: string): Promise<void> {
    if (this.holders.get(serverId) === taskId) this.holders.delete(serverId);
  }
}
