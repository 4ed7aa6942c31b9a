/** The worker's MessageVisibility in memory: records visibility changes. */
import type { MessageVisibility } from '../../lambdas/handlers/worker/sqs-message-visibility';

export class FakeVisibility implements MessageVisibility {
  public readonly changes: { receiptHandle: string; seconds: number }[] = [];
  public async change(receiptHandle: string, seconds: number): Promise<void> {
    this.changes.push({ receiptHandle, seconds });
  }
}
