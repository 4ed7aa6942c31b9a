/**
 * Stands in for `@aws-sdk/credential-provider-node` inside the Lambda bundles (esbuild alias in
 * lib/constructs/relay-bundling.ts). Every SDK client's runtime config imports that package's
 * `defaultProvider` whether or not `credentials` is passed, and with it the SSO, STS, INI, process,
 * web-identity and container providers (`@aws-sdk/nested-clients`). In Lambda the execution role's
 * credentials are always in the environment (AWS_ACCESS_KEY_ID, AWS_SECRET_ACCESS_KEY,
 * AWS_SESSION_TOKEN), so the environment provider is the whole chain there.
 *
 * Only bundles see this module: jest, `npm start` and the CDK app import the real chain.
 */
import { fromEnv, type FromEnvInit } from '@aws-sdk/credential-provider-env';

/** The SDK's `defaultProvider`, reduced to the environment. */
export const defaultProvider = (init: FromEnvInit = {}) => fromEnv(init);
