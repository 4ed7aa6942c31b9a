/** The relay's single DynamoDB table: tasks, rate windows, quota, pacing, claims, caches, idempotency keys. */
import { RemovalPolicy } from 'aws-cdk-lib';
import * as dynamodb from 'aws-cdk-lib/aws-dynamodb';
import { Construct } from 'constructs';
import { RELAY_TABLE } from '../../contract/resources';

export interface RelayTableProps {
  /**
   * CloudFormation deletion protection; turn it off only for throw-away stacks.
   * @default true
   */
  readonly deletionProtection?: boolean;
}

/**
 * One on-demand table keyed by `pk` with TTL on `ttl` (lib/relay-resources.ts RELAY_TABLE, which the
 * local runtime also builds from). Retained on stack deletion: it holds the task history and the quota.
 */
export class RelayTable extends Construct {
  public readonly table: dynamodb.Table;

  public constructor(scope: Construct, id: string, props: RelayTableProps = {}) {
    super(scope, id);
    this.table = new dynamodb.Table(this, 'Table', {
      partitionKey: { name: RELAY_TABLE.partitionKey, type: dynamodb.AttributeType.STRING },
      timeToLiveAttribute: RELAY_TABLE.ttlAttribute,
      // Traffic is bursty and small (webhooks, a few orders an hour): on-demand costs nothing at rest.
      billingMode: dynamodb.BillingMode.PAY_PER_REQUEST,
      pointInTimeRecoverySpecification: { pointInTimeRecoveryEnabled: true },
      encryption: dynamodb.TableEncryption.AWS_MANAGED,
      deletionProtection: props.deletionProtection ?? true,
      removalPolicy: RemovalPolicy.RETAIN,
    });
    // The waiting queue (issue 29 §5): one Query reads every waiting standing order, in order.
    this.table.addGlobalSecondaryIndex({
      indexName: RELAY_TABLE.waitingIndex.name,
      partitionKey: { name: RELAY_TABLE.waitingIndex.partitionKey, type: dynamodb.AttributeType.STRING },
      sortKey: { name: RELAY_TABLE.waitingIndex.sortKey, type: dynamodb.AttributeType.STRING },
      projectionType: dynamodb.ProjectionType.ALL,
    });
  }
}

/**
 * Grants on the table are per function and per item family: lib/constructs/table-access.ts
 * (grantTableAccess), never table-wide.
 */
