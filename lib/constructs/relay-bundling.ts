/**
 * esbuild options of the relay's Lambda bundles that are not NodejsFunction defaults, in one place
 * for RelayFunction and the bundle bench (bench/bundles.ts), so the bench measures what is deployed.
 */
import * as path from 'node:path';

/**
 * Import path → replacement module. The default credential chain is replaced by the environment
 * provider (lambdas/adapters/env-credentials.ts): Lambda always hands the role's credentials to the
 * function in its environment, and the full chain costs ~70 KB and a few ms of load per bundle.
 */
export const relayEsbuildAliases = (repoRoot: string): Readonly<Record<string, string>> => ({
  '@aws-sdk/credential-provider-node': path.join(repoRoot, 'lambdas', 'adapters', 'env-credentials.ts'),
});
