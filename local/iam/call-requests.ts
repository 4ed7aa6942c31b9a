/**
 * Evaluating a call, first half (issue 30): what IAM evaluates for one AWS SDK call, as DynamoDB,
 * SQS, Step Functions, Secrets Manager, KMS, SNS and CloudWatch would authorize it: its action, its
 * resource and the condition values of the request (`dynamodb:LeadingKeys` holds every partition key
 * it touches; a transaction is checked item by item, each with its own action). ./evaluation.ts
 * decides each request against the policies.
 */
import { RELAY_TABLE } from '../../contract/resources';
import { tableArn } from '../stack-model';

/** One request to authorize: what IAM evaluates for an SDK call (a transaction is several). */
export interface IamRequest {
  readonly action: string;
  readonly resource: string;
  readonly context: Readonly<Record<string, string | string[]>>;
}

/** The IAM requests of one SDK call (service = the client name without `Client`), or undefined when unmodelled. */
export const requestsForCall = (
  service: string,
  command: string,
  input: Record<string, unknown>,
  queueArnOf: (url: string) => string,
): IamRequest[] | undefined => {
  const op = command.replace(/Command$/, '');
  // Every relay client talks HTTPS to AWS (the SDK's default endpoints); locally only the stand-ins are plain HTTP.
  const base = { 'aws:SecureTransport': 'true' };
  switch (service) {
    case 'DynamoDB':
      return dynamoRequests(op, input, base);
    case 'SQS': {
      const action = `sqs:${op.replace(/Batch$/, '')}`;
      const url = input.QueueUrl as string | undefined;
      return [{ action, resource: url ? queueArnOf(url) : '*', context: base }];
    }
    case 'SFN': {
      const resource = (input.stateMachineArn ?? input.executionArn ?? '*') as string;
      return [{ action: `states:${op}`, resource, context: base }];
    }
    case 'SecretsManager':
      return [{ action: `secretsmanager:${op}`, resource: String(input.SecretId ?? '*'), context: base }];
    case 'KMS':
      return [{ action: `kms:${op}`, resource: String(input.KeyId ?? '*'), context: base }];
    case 'SNS':
      return [{ action: `sns:${op}`, resource: String(input.TopicArn ?? '*'), context: base }];
    case 'CloudWatch':
      return [{ action: `cloudwatch:${op}`, resource: '*', context: base }];
    default:
      return undefined;
  }
};

type AttributeValue = { S?: string; N?: string; B?: Uint8Array };
/**
 * The partition key of a key or item, marshalled (`{ pk: { S: 'TASK#1' } }`) or not (the document
 * client's middleware may run after this check): DynamoDB evaluates LeadingKeys on its value.
 */
const keyValue = (item: unknown): string | undefined => {
  const value = (item as Record<string, unknown> | undefined)?.[RELAY_TABLE.partitionKey];
  if (value === undefined || value === null) return undefined;
  if (typeof value === 'string' || typeof value === 'number') return String(value);
  const attribute = value as AttributeValue;
  return attribute.S ?? attribute.N ?? (attribute.B ? Buffer.from(attribute.B).toString('base64') : undefined);
};

const dynamoRequests = (op: string, input: Record<string, unknown>, base: Record<string, string>): IamRequest[] => {
  const leading = (keys: (string | undefined)[]) => {
    const values = [...new Set(keys.filter((k): k is string => k !== undefined))].sort();
    return values.length > 0 ? { ...base, 'dynamodb:LeadingKeys': values } : base;
  };
  const table = (name: unknown) => tableArn(String(name));
  switch (op) {
    case 'GetItem':
    case 'DeleteItem':
    case 'UpdateItem':
      return [{ action: `dynamodb:${op}`, resource: table(input.TableName), context: leading([keyValue(input.Key)]) }];
    case 'PutItem':
      return [
        { action: 'dynamodb:PutItem', resource: table(input.TableName), context: leading([keyValue(input.Item)]) },
      ];
    case 'BatchGetItem':
      return Object.entries((input.RequestItems ?? {}) as Record<string, { Keys?: unknown[] }>).map(([name, r]) => ({
        action: 'dynamodb:BatchGetItem',
        resource: table(name),
        context: leading((r.Keys ?? []).map(keyValue)),
      }));
    case 'BatchWriteItem':
      return Object.entries(
        (input.RequestItems ?? {}) as Record<
          string,
          { PutRequest?: { Item: unknown }; DeleteRequest?: { Key: unknown } }[]
        >,
      ).map(([name, writes]) => ({
        action: 'dynamodb:BatchWriteItem',
        resource: table(name),
        context: leading(writes.map((w) => keyValue(w.PutRequest?.Item ?? w.DeleteRequest?.Key))),
      }));
    // A transaction is authorized item by item, each with the action of its kind.
    case 'TransactWriteItems':
      return (
        (input.TransactItems ?? []) as Record<string, { TableName: string; Key?: unknown; Item?: unknown }>[]
      ).map((item) => {
        const [kind, body] = Object.entries(item)[0];
        const action = {
          Put: 'PutItem',
          Update: 'UpdateItem',
          Delete: 'DeleteItem',
          ConditionCheck: 'ConditionCheckItem',
        }[kind];
        return {
          action: `dynamodb:${action ?? kind}`,
          resource: table(body.TableName),
          context: leading([keyValue(body.Key ?? body.Item)]),
        };
      });
    case 'TransactGetItems':
      return ((input.TransactItems ?? []) as { Get: { TableName: string; Key: unknown } }[]).map(({ Get }) => ({
        action: 'dynamodb:GetItem',
        resource: table(Get.TableName),
        context: leading([keyValue(Get.Key)]),
      }));
    case 'Query': {
      const resource = input.IndexName
        ? `${table(input.TableName)}/index/${String(input.IndexName)}`
        : table(input.TableName);
      const names = (input.ExpressionAttributeNames ?? {}) as Record<string, string>;
      const values = (input.ExpressionAttributeValues ?? {}) as Record<string, AttributeValue>;
      const match = /(#?[\w]+)\s*=\s*(:[\w]+)/.exec(String(input.KeyConditionExpression ?? ''));
      const attribute = match ? (names[match[1]] ?? match[1]) : undefined;
      const key =
        match && attribute === RELAY_TABLE.partitionKey ? keyValue({ [attribute]: values[match[2]] }) : undefined;
      return [{ action: 'dynamodb:Query', resource, context: leading([key]) }];
    }
    default:
      return [{ action: `dynamodb:${op}`, resource: input.TableName ? table(input.TableName) : '*', context: base }];
  }
};
