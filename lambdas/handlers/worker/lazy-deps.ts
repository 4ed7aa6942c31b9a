/**
 * What the job worker uses for some jobs only, loaded on first use (lazyPort; issue 40 §1): the
 * waiting queue's entries (a price alert's standing order, cancel-task), the spend reservations of an
 * extension or a raise (extend-order, set-spot-price) and the SQS client that delays a failed job's
 * retry. Built as from-env.ts builds them; each loads its adapter's module only (a dynamic import keeps
 * every export of what it loads). The worker does not import from-env.ts: esbuild assigns chunks by
 * file, so the adapters from-env.ts imports would be back in the chunk every cold start loads.
 */
import type { WaitingTasks } from '../../domain/ports';
import type { SpendStore } from '../../domain/teams/spend-budget';
import type { SpendExtensionMethods } from '../../adapters/dynamodb/dynamodb-spend-store';
import { documentClient } from '../../adapters/aws-clients';
import type { RelayEnv } from '../../adapters/env';
import { lazyPort } from '../../adapters/lazy-port';
import type { MessageVisibility } from './retry-visibility';

type WaitingEntryMethods = 'add' | 'admit' | 'get' | 'remove';

/** The standing-order queue's entries (a price alert's admission, cancel-task), on first use. */
export const lazyWaitingEntriesFromEnv = (env: RelayEnv): Pick<WaitingTasks, WaitingEntryMethods> =>
  lazyPort<Omit<WaitingTasks, 'list'>, WaitingEntryMethods>(async () => {
    const { DynamoDbWaitingEntries } = await import('../../adapters/dynamodb/dynamodb-waiting-entries');
    return new DynamoDbWaitingEntries(documentClient(), env.TABLE_NAME);
  }, ['add', 'admit', 'get', 'remove']);

/** An extension's or a raise's reservation (extend-order, set-spot-price), on first use. */
export const lazySpendExtensionsFromEnv = (env: RelayEnv): Pick<SpendStore, SpendExtensionMethods> =>
  lazyPort<Pick<SpendStore, SpendExtensionMethods>, SpendExtensionMethods>(async () => {
    const { spendExtensions } = await import('../../adapters/dynamodb/dynamodb-spend-store');
    return spendExtensions({ doc: documentClient(), tableName: env.TABLE_NAME });
  }, ['extend', 'reprice', 'unprice', 'repriced']);

/** ChangeMessageVisibility on the job queue: its module and the SQS client, on first use. */
export const lazyMessageVisibility = (queueUrl: string): MessageVisibility =>
  lazyPort<MessageVisibility, 'change'>(async () => {
    const [{ SqsMessageVisibility }, { sqsClient }] = await Promise.all([
      import('./sqs-message-visibility'),
      import('../../adapters/sqs-client'),
    ]);
    return new SqsMessageVisibility(sqsClient(), queueUrl);
  }, ['change']);
