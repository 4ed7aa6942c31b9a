/** The Lambda environment for tests: what the stack (or the local runtime) always sets, plus `vars`. */
import { relayEnvSchema, type RelayEnv } from '../../lambdas/adapters/env';

/** TABLE_NAME and MARKETPLACE_URL have no defaults inside Lambda; tests give them explicitly. */
export const REQUIRED_ENV = { TABLE_NAME: 'relay-test', MARKETPLACE_URL: 'http://127.0.0.1:5001' } as const;

export const testEnv = (vars: Readonly<Record<string, string>> = {}): RelayEnv =>
  relayEnvSchema().parse({ ...REQUIRED_ENV, ...vars });

export const SECRET = 'test-webhook-secret';
export const PREVIOUS_SECRET = 'previous-webhook-secret';

/** The API handlers' env: signed with SECRET; Slack commands without a signing secret pass (the spec, as under `npm start`); tests of the AWS refusal override it. */
export const apiEnv = (overrides: Record<string, string> = {}): RelayEnv =>
  testEnv({ WEBHOOK_SECRET: SECRET, ALLOW_PRIVATE_CALLBACKS: 'false', ALLOW_UNSIGNED_SLACK: 'true', ...overrides });
