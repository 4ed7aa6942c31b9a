/**
 * esbuild options of the relay's Lambda bundles that are not NodejsFunction defaults, in one place
 * for RelayFunction and the bundle bench (bench/bundles.ts), so the bench measures what is deployed.
 */
import * as path from 'node:path';

/**
 * Import path → replacement module. The default credential chain is replaced by the environment
 * provider (lambdas/adapters/env-credentials.ts): Lambda always hands the role's credentials to the
 * function in its environment, and the full chain costs ~70 KB and a few ms of load per bundle.
 * Smithy's event-stream codec (~15 KB, loaded only for event-stream operations, which none of the
 * relay's clients has) is replaced by a module that throws (lambdas/adapters/no-event-streams.ts),
 * and mnemonist's LRU cache (~7 KB with obliterator; the DynamoDB client's endpoint-discovery cache,
 * empty unless discovery is enabled) by a Map-based one (lambdas/adapters/lru-cache.ts).
 */
export const relayEsbuildAliases = (repoRoot: string): Readonly<Record<string, string>> => ({
  '@aws-sdk/credential-provider-node': path.join(repoRoot, 'lambdas', 'adapters', 'env-credentials.ts'),
  '@smithy/core/event-streams': path.join(repoRoot, 'lambdas', 'adapters', 'no-event-streams.ts'),
  'mnemonist/lru-cache': path.join(repoRoot, 'lambdas', 'adapters', 'lru-cache.ts'),
});
