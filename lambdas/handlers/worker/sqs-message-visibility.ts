/** Moves a received job message's next appearance: the worker's retry delay (2^retry s) on SQS. */
import { ChangeMessageVisibilityCommand, type SQSClient } from '@aws-sdk/client-sqs';

/** Sets when a received message becomes visible again. */
export interface MessageVisibility {
  change(receiptHandle: string, visibilityTimeoutSeconds: number): Promise<void>;
}

/** ChangeMessageVisibility on one queue. */
export class SqsMessageVisibility implements MessageVisibility {
  public constructor(
    private readonly client: SQSClient,
    private readonly queueUrl: string,
  ) {}

  public async change(receiptHandle: string, visibilityTimeoutSeconds: number): Promise<void> {
    await this.client.send(new ChangeMessageVisibilityCommand({
      QueueUrl: this.queueUrl,
      ReceiptHandle: receiptHandle,
      VisibilityTimeout: visibilityTimeoutSeconds,
    }));
  }
}
