/**
 * The shared SQS client, in a module of its own rather than beside the DynamoDB client in
 * aws-clients.ts: the job worker sends to SQS only to delay a failed job's retry, and loads the
 * client from a lazy chunk then (issue 40 §1), which a static import of `@aws-sdk/client-sqs` from
 * aws-clients.ts would put back in its every cold start.
 */
import { SQSClient } from '@aws-sdk/client-sqs';
import { awsClientConfig } from './aws-clients';
import { traceClient } from './observability';

let sqs: SQSClient | undefined;

/** The shared SQS client. */
export const sqsClient = (): SQSClient => {
  // Address the configured endpoint, not the host inside the queue URL (local emulators hand out
  // URLs on *.localhost names that do not resolve).
  sqs ??= traceClient(new SQSClient({ ...awsClientConfig(), useQueueUrlAsEndpoint: false }));
  return sqs;
};
