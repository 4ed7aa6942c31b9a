/**
 * What the fleet watch uses only when something happens, loaded then (lazyPort; issue 40 §1): the
 * ledger (an order ended, a rebid's raise), the host records (an outbid), the caller keys (a key check
 * before a standing order or a replacement round), the notifier (a lease warning or expiry, a status
 * change) and the replacer of outbid orders. Built as
 * from-env.ts builds them; each loads its own module only. The watch does not import from-env.ts:
 * esbuild assigns chunks by file, so the adapters from-env.ts imports would be back in the chunk every
 * cold start loads.
 */
import type { HostRecords } from '../../domain/hosts/host-records';
import type { EventSender } from '../../domain/leases/lease-ports';
import type { Notifier } from '../../domain/ports';
import type { Replacer } from '../../domain/recovery/outbid-recovery';
import type { ReplacerDeps, ReplacerSettings } from '../../domain/recovery/outbid-replacement';
import type { CallerKeyStore } from '../../domain/teams/caller-keys';
import type { SpendStore } from '../../domain/teams/spend-budget';
import { documentClient } from '../../adapters/aws-clients';
import type { RelayEnv } from '../../adapters/env';
import { lazyPort } from '../../adapters/lazy-port';

type SpendMethods = 'reserve' | 'extend' | 'reprice' | 'unprice' | 'repriced' | 'started' | 'settle' | 'reservation';

/** Spending budgets and the ledger (settlements, a rebid's reservation), on first use. */
export const lazySpendStoreFromEnv = (env: RelayEnv): Pick<SpendStore, SpendMethods> =>
  lazyPort<SpendStore, SpendMethods>(async () => {
    const { DynamoDbSpendStore } = await import('../../adapters/dynamodb/dynamodb-spend-store');
    return new DynamoDbSpendStore(documentClient(), env.TABLE_NAME);
  }, ['reserve', 'extend', 'reprice', 'unprice', 'repriced', 'started', 'settle', 'reservation']);

/** The relay's host records with the avoidance settings (an outbid's record), on first use. */
export const lazyHostRecordsFromEnv = (env: RelayEnv): Pick<HostRecords, 'record' | 'avoided' | 'avoidances'> =>
  lazyPort<HostRecords, 'record' | 'avoided' | 'avoidances'>(async () => {
    const { DynamoDbHostRecords } = await import('../../adapters/dynamodb/dynamodb-host-records');
    return new DynamoDbHostRecords(documentClient(), env.TABLE_NAME, {
      afterFailures: env.HOST_AVOID_AFTER_FAILURES,
      hours: env.HOST_AVOID_HOURS,
    });
  }, ['record', 'avoided', 'avoidances']);

/** Caller keys, cached per instance for CALLER_KEY_CACHE_SECONDS (a key check), on first use. */
export const lazyCallerKeyListFromEnv = (env: RelayEnv): Pick<CallerKeyStore, 'list'> =>
  lazyPort<CallerKeyStore, 'list'>(async () => {
    const { DynamoDbCallerKeys } = await import('../../adapters/dynamodb/dynamodb-caller-keys');
    return new DynamoDbCallerKeys(documentClient(), env.TABLE_NAME, env.CALLER_KEY_CACHE_SECONDS);
  }, ['list']);

/**
 * The replacer of outbid orders (domain/recovery/outbid-replacement.ts) and its pending rounds' store,
 * on first use. Its `settle` runs at every sweep that may start workflows, so the chunk is loaded by an
 * instance's first sweep: out of the module load, not out of the first call.
 */
export const lazyReplacer = (
  env: RelayEnv,
  deps: Omit<ReplacerDeps, 'pending'>,
  settings: ReplacerSettings,
): Replacer =>
  lazyPort<Replacer, 'replace' | 'settle'>(async () => {
    const [{ createReplacer }, { DynamoDbPendingReplacements }] = await Promise.all([
      import('../../domain/recovery/outbid-replacement'),
      import('../../adapters/dynamodb/dynamodb-pending-replacements'),
    ]);
    const pending = new DynamoDbPendingReplacements(documentClient(), env.TABLE_NAME);
    return createReplacer({ ...deps, pending }, settings);
  }, ['replace', 'settle']);

/** The notifier (chat, callbacks, lifecycle events), on first use: a sweep with nothing to say sends nothing. */
export const lazyNotifierFromEnv = (env: RelayEnv): Required<Notifier> & EventSender =>
  lazyPort<Required<Notifier> & EventSender, 'callback' | 'chat' | 'slackResponse' | 'send'>(async () => {
    const { notifierFromEnv } = await import('../../adapters/notifier-from-env');
    return notifierFromEnv(env) as Required<Notifier> & EventSender;
  }, ['callback', 'chat', 'slackResponse', 'send']);
