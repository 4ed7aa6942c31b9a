/**
 * CDK app entry: the only place that reads CDK context. `marketplaceUrl` is required; every other
 * value is optional and validated by relayConfig(); e.g.
 * `npx cdk deploy -c marketplaceUrl=https://... -c alarmEmail=ops@example.com`.
 */
import { App, Validations } from 'aws-cdk-lib';
import { AwsSolutionsChecks } from 'cdk-nag';
import { SETTINGS, type Setting } from '../contract/settings';
import { relayConfig } from '../lib/config';
import { RelayStack } from '../lib/relay-stack';

/** Context values arrive as strings from `-c key=value` and as JSON values from cdk.json. */
type ContextValue = string | number | boolean | Record<string, unknown> | undefined;

const parseJson = (name: string, value: ContextValue): unknown => {
  if (typeof value !== 'string') return value;
  try {
    return JSON.parse(value);
  } catch {
    throw new Error(`context ${name} must be JSON, e.g. {"22":"tcp","8888":"http"}`);
  }
};

const toNumber = (value: ContextValue): unknown =>
  typeof value === 'string' && value.trim() !== '' ? Number(value) : value;

const toBoolean = (value: ContextValue): unknown => (value === 'true' ? true : value === 'false' ? false : value);

/** A context value decoded for its setting's kind (relayConfig() validates it). */
const fromContext = (key: string, setting: Setting, value: ContextValue): unknown => {
  switch (setting.kind) {
    case 'int':
    case 'hours':
    case 'amount':
      return toNumber(value);
    case 'bool':
      return toBoolean(value);
    case 'ports':
      return parseJson(key, value);
    default:
      return value;
  }
};

/** Drops unset keys so relayConfig() fills the spec's defaults. */
const defined = <T extends Record<string, unknown>>(record: T): Partial<T> =>
  Object.fromEntries(Object.entries(record).filter(([, value]) => value !== undefined && value !== '')) as Partial<T>;

/** Thrown by the app when context `marketplaceUrl` is not set. */
export const MISSING_MARKETPLACE_URL_MESSAGE =
  'context marketplaceUrl is required: the marketplace API base URL the functions call, e.g. ' +
  '`npx cdk deploy -c marketplaceUrl=https://api.example-marketplace.com` (or "marketplaceUrl" in cdk.json)';

/**
 * Builds the validated config from the app's context; throws naming every bad value. The
 * marketplace URL has no default here: a stack deployed without one would call a placeholder host.
 */
export const configFromContext = (app: App) => {
  const ctx = (key: string): ContextValue => app.node.tryGetContext(key) as ContextValue;
  const marketplaceUrl = ctx('marketplaceUrl');
  if (marketplaceUrl === undefined || (typeof marketplaceUrl === 'string' && marketplaceUrl.trim() === '')) {
    throw new Error(MISSING_MARKETPLACE_URL_MESSAGE);
  }
  const rate = toNumber(ctx('apiThrottleRate'));
  const burst = toNumber(ctx('apiThrottleBurst'));
  // Every setting the stack deploys is CDK context under its key in contract/settings.ts.
  const settings: Record<string, unknown> = {};
  for (const [key, setting] of Object.entries(SETTINGS) as [string, Setting][]) {
    if (setting.deployed === false) continue;
    settings[key] = fromContext(key, setting, key === 'marketplaceUrl' ? marketplaceUrl : ctx(key));
  }
  return relayConfig(
    defined({
      ...settings,
      alarmEmail: ctx('alarmEmail'),
      apiThrottle:
        rate === undefined && burst === undefined ? undefined : { rateLimit: rate ?? 50, burstLimit: burst ?? 100 },
      logRetentionDays: toNumber(ctx('logRetentionDays')),
    }) as Parameters<typeof relayConfig>[0],
  );
};

/** The app with its one stack and the cdk-nag AwsSolutions pack; `cdk synth` fails on an unacknowledged finding. */
export const buildApp = (app: App = new App()): { app: App; stack: RelayStack } => {
  const stack = new RelayStack(app, (app.node.tryGetContext('stackName') as string | undefined) ?? 'GpuOrderRelay', {
    config: configFromContext(app),
    description: 'GPU order relay: signed webhooks, order workflow, job queue',
    tableDeletionProtection: ![false, 'false'].includes(
      app.node.tryGetContext('tableDeletionProtection') as string | boolean,
    ),
    env: { account: process.env.CDK_DEFAULT_ACCOUNT, region: process.env.CDK_DEFAULT_REGION },
  });
  Validations.of(app).addPlugins(new AwsSolutionsChecks(app));
  return { app, stack };
};

// Imported by the tests for configFromContext/buildApp; synthesized only when run as the CDK app.
// A configuration mistake is the operator's to fix: its message alone, not a stack trace (issue 28).
if (require.main === module) {
  try {
    buildApp().app.synth();
  } catch (error) {
    const message = error instanceof Error ? error.message : String(error);
    if (message !== MISSING_MARKETPLACE_URL_MESSAGE && !/^(relay config|context )/i.test(message)) throw error;
    console.error(`cdk: ${message}`);
    process.exit(1);
  }
}
