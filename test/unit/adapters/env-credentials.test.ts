import { build } from 'esbuild';
import * as path from 'node:path';
import { defaultProvider } from '../../../lambdas/adapters/env-credentials';
import { RELAY_BUNDLE_TARGET, relayEsbuildAliases } from '../../../lib/constructs/relay-bundling';

const ROOT = path.resolve(__dirname, '..', '..', '..');

describe("env-credentials (the bundles' default credential provider)", () => {
  const saved = { ...process.env };
  afterEach(() => {
    process.env = { ...saved };
  });

  it('reads the role credentials Lambda puts in the environment', async () => {
    process.env.AWS_ACCESS_KEY_ID = 'AKIDTEST';
    process.env.AWS_SECRET_ACCESS_KEY = 'secret';
    process.env.AWS_SESSION_TOKEN = 'token';
    await expect(defaultProvider()()).resolves.toMatchObject({
      accessKeyId: 'AKIDTEST',
      secretAccessKey: 'secret',
      sessionToken: 'token',
    });
  });

  it('fails loudly without them (no silent fallback to another source)', async () => {
    delete process.env.AWS_ACCESS_KEY_ID;
    delete process.env.AWS_SECRET_ACCESS_KEY;
    await expect(defaultProvider()()).rejects.toThrow(/Unable to find environment variable credentials/);
  });

  it('replaces the whole default chain in a bundle: no SSO/STS/INI providers, no nested clients', async () => {
    const result = await build({
      entryPoints: [path.join(ROOT, 'lambdas/handlers/api/create-order.ts')],
      bundle: true,
      write: false,
      platform: 'node',
      format: 'esm',
      target: RELAY_BUNDLE_TARGET,
      metafile: true,
      logLevel: 'silent',
      mainFields: ['module', 'main'],
      alias: { ...relayEsbuildAliases(ROOT) },
    });
    const inputs = Object.keys(result.metafile.inputs);
    expect(
      inputs.filter((p) =>
        /credential-provider-(node|ini|sso|process|web-identity|http)|nested-clients|token-providers/.test(p),
      ),
    ).toEqual([]);
    expect(inputs.some((p) => p.includes('credential-provider-env'))).toBe(true);
  }, 30_000);
});
