/** JobQueue over SQS: the message body is the JobMessage JSON; kind and task_id are also attributes for tracing and filtering. */
import { SendMessageCommand, type SQSClient } from '@aws-sdk/client-sqs';
import type { JobQueue } from '../domain/ports';
import type { JobMessage } from '../domain/task';

/** Sends cancel-order, status and price-alert jobs. Failures throw (ingress answers 503). */
export class SqsJobQueue implements JobQueue {
  public constructor(
    private readonly client: SQSClient,
    private readonly queueUrl: string,
  ) {}

  public async send(message: JobMessage): Promise<void> {
    await this.client.send(
      new SendMessageCommand({
        QueueUrl: this.queueUrl,
        MessageBody: JSON.stringify(message),
        MessageAttributes: {
          kind: { DataType: 'String', StringValue: message.kind },
          task_id: { DataType: 'String', StringValue: message.task_id },
        },
      }),
    );
  }
}
