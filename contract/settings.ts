/**
 * The relay's settings, each declared once: its environment variable and default (its meaning is in
 * ./setting-docs.ts, kept out of the function bundles). The CDK
 * `RelayConfig` (lib/config.ts) and the Lambda environment schema (lambdas/adapters/env.ts) are both
 * derived from this table, and lib/function-environment.ts writes one into the other.
 */
import type { Ports } from './shapes';

/**
 * How a value is written: `int`, `hours` (a positive number, fractions allowed), `amount` (zero or a
 * positive number, fractions allowed) and `bool` are decoded
 * from env strings, `ports` from JSON, `ids` from a comma-separated list of Slack IDs (`T0123ABC,T0456DEF`),
 * `choice` is one of the setting's `choices`, `ssh-key` one OpenSSH public key line (never a private key).
 */
export type SettingKind = 'url' | 'text' | 'ssh-key' | 'int' | 'hours' | 'amount' | 'bool' | 'ports' | 'ids' | 'choice';
export type SettingValue<K extends SettingKind> = K extends 'int' | 'hours' | 'amount'
  ? number
  : K extends 'bool'
    ? boolean
    : K extends 'ports'
      ? Ports
      : K extends 'ids'
        ? readonly string[]
        : string;

/** A Slack team, enterprise or user ID (`T0123ABC`, `U0456DEF`): upper-case letters and digits. */
export const SLACK_ID_PATTERN = /^[A-Z0-9]{2,64}$/;

/** The IDs of an `ids` setting's text: split on commas, trimmed, empty entries dropped (not validated). */
export const parseIdList = (text: string): string[] =>
  text
    .split(',')
    .map((id) => id.trim())
    .filter((id) => id !== '');

/** Why an `ids` list is refused (empty, or an entry that is no Slack ID), or undefined when it is fine. */
export const idListProblem = (name: string, ids: readonly string[]): string | undefined => {
  if (ids.length === 0) return `${name} must list at least one ID (comma-separated), or be unset`;
  const bad = ids.find((id) => !SLACK_ID_PATTERN.test(id));
  return bad === undefined
    ? undefined
    : `${name}: ${JSON.stringify(bad.slice(0, 70))} is not a Slack ID (upper-case letters and digits, e.g. T0123ABC)`;
};

export interface Setting<K extends SettingKind = SettingKind> {
  readonly env: string;
  readonly kind: K;
  /** Default inside the functions (and `npm start`); absent = required (unless `optional`). */
  readonly default?: SettingValue<K>;
  /** True: no default and may stay unset everywhere (unset = the feature is off). */
  readonly optional?: true;
  /** Default of the deployed stack's RelayConfig when it differs from `default`. */
  readonly deployedDefault?: SettingValue<K>;
  /** True: `cdk synth` / `cdk deploy` refuse to run without it (bin/relay.ts); `deployedDefault` serves tests only. */
  readonly deployedRequired?: true;
  /** Default under `npm start` (local/runtime.ts) when it differs from `default`. */
  readonly localDefault?: SettingValue<K>;
  /** False: a function setting the stack does not configure (the function default applies). @default true */
  readonly deployed?: boolean;
  /** `int` only: 0 allows zero. @default 1 */
  readonly min?: 0 | 1;
  /** `int`, `hours` and `amount`: the largest value, and why. */
  readonly max?: { readonly value: number; readonly reason: string };
  /** `choice` only: the values allowed. */
  readonly choices?: readonly [string, ...string[]];
}

/** `MARKETPLACE_PRICE_PERIOD` values: the period of the marketplace's `price.usd.*` figures. */
export const PRICE_PERIODS = ['hour', 'day'] as const;
export type PricePeriod = (typeof PRICE_PERIODS)[number];
export const isPricePeriod = (value: unknown): value is PricePeriod =>
  (PRICE_PERIODS as readonly unknown[]).includes(value);

export const SETTINGS = {
  marketplaceUrl: {
    env: 'MARKETPLACE_URL',
    kind: 'url',
    deployedDefault: 'https://marketplace.example.invalid',
    deployedRequired: true,
  },
  defaultImage: { env: 'DEFAULT_IMAGE', kind: 'text', default: 'nvidia/cuda:12.4.1-base-ubuntu22.04' },
  defaultCurrency: { env: 'DEFAULT_CURRENCY', kind: 'text', default: 'NATIVE-Blockchain' },
  defaultPorts: { env: 'DEFAULT_PORTS', kind: 'ports', default: { '22': 'tcp', '8888': 'http' } },
  defaultSshPublicKey: { env: 'DEFAULT_SSH_PUBLIC_KEY', kind: 'ssh-key', optional: true },
  maxOrdersPerHour: { env: 'MAX_ORDERS_PER_HOUR', kind: 'int', default: 10 },
  maxRequestsPerMinute: {
    env: 'MAX_REQUESTS_PER_MINUTE',
    kind: 'int',
    default: 60,
    // At 600 the window item is ≤ 54 KB (dynamodb-sliding-window test).
    max: { value: 600, reason: 'the exact window keeps every in-window request in one DynamoDB item' },
  },
  orderReadyTimeoutSeconds: { env: 'ORDER_READY_TIMEOUT_SECONDS', kind: 'int', default: 120 },
  orderPollIntervalSeconds: { env: 'ORDER_POLL_INTERVAL_SECONDS', kind: 'int', default: 5 },
  allowPrivateCallbacks: { env: 'ALLOW_PRIVATE_CALLBACKS', kind: 'bool', default: false, localDefault: true },
  requireWebhookTimestamp: {
    env: 'REQUIRE_WEBHOOK_TIMESTAMP',
    kind: 'bool',
    default: false,
    deployedDefault: true,
  },
  // Signature versions (issue 29): v2 binds method and route; the admin routes and caller keys need it always.
  signatureVersions: {
    env: 'SIGNATURE_VERSIONS',
    kind: 'choice',
    choices: ['v2', 'v1,v2'],
    default: 'v1,v2',
    deployedDefault: 'v2',
  },
  allowUnsignedSlack: {
    env: 'ALLOW_UNSIGNED_SLACK',
    kind: 'bool',
    default: false,
    // The spec's single-host relay: /slack/command without a signing secret is not verified locally.
    localDefault: true,
  },
  slackAllowedTeamIds: {
    env: 'SLACK_ALLOWED_TEAM_IDS',
    kind: 'ids',
    optional: true,
  },
  slackAllowedUserIds: {
    env: 'SLACK_ALLOWED_USER_IDS',
    kind: 'ids',
    optional: true,
  },
  slackUnmappedUsers: {
    env: 'SLACK_UNMAPPED_USERS',
    kind: 'choice',
    choices: ['default', 'deny'],
    default: 'default',
    // Issue 29 §7: an unmapped user must not get more rights than a mapped one where it is public.
    deployedDefault: 'deny',
  },
  marketplaceTimeoutMs: { env: 'MARKETPLACE_TIMEOUT_MS', kind: 'int', deployed: false, default: 10_000 },
  marketplaceMinIntervalMs: {
    env: 'MARKETPLACE_MIN_INTERVAL_MS',
    kind: 'int',
    deployed: false,
    min: 0,
    default: 1_000,
  },
  marketplaceMaxIntervalMs: {
    env: 'MARKETPLACE_MAX_INTERVAL_MS',
    kind: 'int',
    deployed: false,
    min: 0,
    default: 10_000,
  },
  marketplaceCreateIntervalMs: {
    env: 'MARKETPLACE_CREATE_INTERVAL_MS',
    kind: 'int',
    deployed: false,
    min: 0,
    default: 5_000,
  },
  marketplacePricePeriod: {
    env: 'MARKETPLACE_PRICE_PERIOD',
    kind: 'choice',
    optional: true,
    choices: PRICE_PERIODS,
  },
  defaultMaxHours: {
    env: 'DEFAULT_MAX_HOURS',
    kind: 'hours',
    optional: true,
    max: { value: 720, reason: 'a lease is at most 30 days (max_hours)' },
  },
  watchIntervalSeconds: { env: 'WATCH_INTERVAL_SECONDS', kind: 'int', default: 60 },
  leaseWarningSeconds: { env: 'LEASE_WARNING_SECONDS', kind: 'int', min: 0, default: 600 },
  orderVisibleTimeoutSeconds: {
    env: 'ORDER_VISIBLE_TIMEOUT_SECONDS',
    kind: 'int',
    min: 0,
    default: 60,
    max: {
      value: 120,
      reason: 'PlaceOrder may wait twice this long (an earlier intent, then its own create) inside its Lambda timeout',
    },
  },
  readinessProbe: {
    env: 'READINESS_PROBE',
    kind: 'choice',
    choices: ['ssh-login', 'ssh', 'none'],
    default: 'ssh-login',
  },
  // Host filters and choice (issue 31): a positive number with a ceiling (the `hours` kind decodes exactly that).
  defaultMinReliability: {
    env: 'DEFAULT_MIN_RELIABILITY',
    kind: 'hours',
    optional: true,
    max: { value: 1, reason: "the marketplace's reliability runs from 0 to 1" },
  },
  defaultMinRating: {
    env: 'DEFAULT_MIN_RATING',
    kind: 'hours',
    optional: true,
    max: { value: 5, reason: "the marketplace's rating runs from 0 to 5" },
  },
  defaultMinRatingCount: { env: 'DEFAULT_MIN_RATING_COUNT', kind: 'int', optional: true },
  defaultPrefer: {
    env: 'DEFAULT_PREFER',
    kind: 'choice',
    choices: ['first', 'cheapest', 'reliable'],
    default: 'first',
  },
  callerKeyCacheSeconds: {
    env: 'CALLER_KEY_CACHE_SECONDS',
    kind: 'int',
    min: 0,
    default: 60,
    max: { value: 60, reason: 'a revoked caller key must be refused within 60 s on every instance' },
  },
  // USD, a positive number (the `hours` kind decodes exactly that).
  spendLimitUsdPerDay: { env: 'SPEND_LIMIT_USD_PER_DAY', kind: 'hours', optional: true },
  // The marketplace's fees (issue 29 §3), in every reservation and settlement; `npm start` sets 0 for the spec dialect's simulator.
  renterFeePercent: {
    env: 'RENTER_FEE_PERCENT',
    kind: 'amount',
    default: 5,
    max: { value: 100, reason: 'a fee is a percentage of the price' },
  },
  orderCreationFeeUsd: { env: 'ORDER_CREATION_FEE_USD', kind: 'amount', default: 0.1 },
  jobRetryBaseMs: { env: 'JOB_RETRY_BASE_MS', kind: 'int', deployed: false, default: 1_000 },
  // The relay's AWS SDK calls, per attempt (lambdas/adapters/aws-clients.ts): 2 s is sized for DynamoDB,
  // SQS and Step Functions in-region, and the functions' time budgets count on it; `npm start`'s
  // emulators run in the relay's own process, on its CPU.
  awsCallTimeoutMs: {
    env: 'AWS_CALL_TIMEOUT_MS',
    kind: 'int',
    deployed: false,
    default: 2_000,
    localDefault: 10_000,
  },
  // ---- issue 29 §5 and §7 (the waiting queue's caps, the ssh probe's own address policy) ----
  allowPrivateSshProbe: { env: 'ALLOW_PRIVATE_SSH_PROBE', kind: 'bool', default: false, localDefault: true },
  maxWaitingTasksPerKey: { env: 'MAX_WAITING_TASKS_PER_KEY', kind: 'int', default: 20 },
  maxWaitingTasks: {
    env: 'MAX_WAITING_TASKS',
    kind: 'int',
    default: 1_000,
    // One slot attribute per waiting task in the WAITSLOTS#total item (about 60 bytes each).
    max: { value: 5_000, reason: 'the waiting slots of all tasks are counted in one DynamoDB item' },
  },
  // ---- issue 31 §2 (the relay's record of each host) ----
  hostAvoidAfterFailures: {
    env: 'HOST_AVOID_AFTER_FAILURES',
    kind: 'int',
    default: 2,
    // The record keeps the latest 20 failure times (lambdas/domain/hosts/host-records.ts FAILURE_SAMPLE_SIZE).
    max: { value: 20, reason: "a host's record keeps its latest 20 failed starts" },
  },
  hostAvoidHours: { env: 'HOST_AVOID_HOURS', kind: 'hours', default: 24 },
} as const satisfies Readonly<Record<string, Setting>>;

export type SettingKey = keyof typeof SETTINGS;
/** The settings the stack configures (RelayConfig). */
export type DeployedSettingKey = {
  [K in SettingKey]: (typeof SETTINGS)[K] extends { readonly deployed: false } ? never : K;
}[SettingKey];
export type SettingValueOf<K extends SettingKey> = SettingValue<(typeof SETTINGS)[K]['kind']>;

/** The env-string form of a value (what the stack writes into a function's environment). */
export const encodeSetting = (kind: SettingKind, value: unknown): string =>
  kind === 'ports' ? JSON.stringify(value) : kind === 'ids' ? (value as readonly string[]).join(',') : String(value);
