/** The EventSender port in memory: records sent events, or reports them undelivered when `fail`. */
import type { OrderEvent } from '../../lambdas/domain/leases/lease';
import type { EventSender } from '../../lambdas/domain/leases/lease-ports';
import { tick } from './tick';

export class FakeEventSender implements EventSender {
  public readonly sent: { url: string; id: string; event: OrderEvent }[] = [];
  public fail = false;
  public async send(url: string, eventId: string, event: OrderEvent): Promise<boolean> {
    await tick();
    if (this.fail) return false;
    this.sent.push({ url, id: eventId, event });
    return true;
  }
}
