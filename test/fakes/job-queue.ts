/** The JobQueue port in memory: records messages, or throws `fail`. */
import type { JobQueue } from '../../lambdas/domain/ports';
import type { JobMessage } from '../../lambdas/domain/task';

export class FakeQueue implements JobQueue {
  public readonly sent: JobMessage[] = [];
  public fail: Error | undefined;
  public async send(message: JobMessage): Promise<void> {
    if (this.fail) throw this.fail;
    this.sent.push(message);
  }
}
