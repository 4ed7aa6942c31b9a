/** Moves a received job message's next appearance on SQS (loaded by the worker only when a job is retried). */
import { ChangeMessageVisibilityCommand, type SQSClient } from '@aws-sdk/client-sqs';
import type { MessageVisibility } from './retry-visibility';

export { retryVisibilitySeconds, type MessageVisibility } from './retry-visibility';

/** ChangeMessageVisibility on one queue. */
export class SqsMessageVisibility implements MessageVisibility {
  public constructor(
    private readonly client: SQSClient,
    private readonly queueUrl: string,
  ) {}

  public async change(receiptHandle: string, visibilityTimeoutSeconds: number): Promise<void> {
    await this.client.send(
      new ChangeMessageVisibilityCommand({
        QueueUrl: this.queueUrl,
        ReceiptHandle: receiptHandle,
        VisibilityTimeout: visibilityTimeoutSeconds,
      }),
    );
  }
}
