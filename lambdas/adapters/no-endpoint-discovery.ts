/**
 * Stands in for `@aws-sdk/middleware-endpoint-discovery` inside the Lambda bundles (esbuild alias in
 * lib/constructs/relay-bundling.ts). The DynamoDB client resolves an endpoint-discovery config at
 * construction (an EndpointCache, mnemonist's LRU cache and the env/config selectors: ~2 KB per
 * bundle), but none of its commands the relay sends uses endpoint discovery in this SDK (no command
 * adds the discovery plugin), and DynamoDB does not need it. This keeps the config's shape with
 * discovery off and no cache. Checked by test/unit/adapters/bundle-stand-ins.test.ts, which also
 * fails if a DynamoDB command ever starts importing the discovery plugin.
 *
 * Only bundles see this module: jest, `npm start` and the CDK app import the real one.
 */
export const NODE_ENDPOINT_DISCOVERY_CONFIG_OPTIONS = {
  environmentVariableSelector: (): undefined => undefined,
  configFileSelector: (): undefined => undefined,
  default: undefined,
};

export const resolveEndpointDiscoveryConfig = <T extends object>(
  input: T,
  { endpointDiscoveryCommandCtor }: { endpointDiscoveryCommandCtor?: unknown },
): T & {
  endpointDiscoveryCommandCtor?: unknown;
  endpointDiscoveryEnabled: () => Promise<boolean>;
  isClientEndpointDiscoveryEnabled: boolean;
} =>
  Object.assign(input, {
    endpointDiscoveryCommandCtor,
    endpointDiscoveryEnabled: () => Promise.resolve(false),
    isClientEndpointDiscoveryEnabled: false,
  });
