/**
 * AWS SDK clients, one of each per Lambda instance, created on first use.
 * No endpoint code here: the SDK reads AWS_ENDPOINT_URL_DYNAMODB / _SQS / _SFN itself, which is how
 * the local runtime points the same handlers at dynalite, fauxqs and local Step Functions.
 */
import { ConditionalCheckFailedException, DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import { SFNClient } from '@aws-sdk/client-sfn';
import { SQSClient } from '@aws-sdk/client-sqs';
import { traceClient } from './observability';

let doc: DynamoDBDocumentClient | undefined;
let sqs: SQSClient | undefined;
let sfn: SFNClient | undefined;

/** The shared DynamoDB document client (undefined attributes are dropped rather than rejected). */
export const documentClient = (): DynamoDBDocumentClient => {
  doc ??= DynamoDBDocumentClient.from(traceClient(new DynamoDBClient({})), {
    marshallOptions: { removeUndefinedValues: true },
  });
  return doc;
};

/** The shared SQS client. */
export const sqsClient = (): SQSClient => {
  // Address the configured endpoint, not the host inside the queue URL (local emulators hand out
  // URLs on *.localhost names that do not resolve).
  sqs ??= traceClient(new SQSClient({ useQueueUrlAsEndpoint: false }));
  return sqs;
};

/** The shared Step Functions client. */
export const sfnClient = (): SFNClient => {
  sfn ??= traceClient(new SFNClient({}));
  return sfn;
};

/** True for a lost conditional write (class check plus name, in case two SDK copies are bundled). */
export const isConditionalCheckFailed = (error: unknown): boolean =>
  error instanceof ConditionalCheckFailedException || (error as { name?: unknown } | null)?.name === 'ConditionalCheckFailedException';
