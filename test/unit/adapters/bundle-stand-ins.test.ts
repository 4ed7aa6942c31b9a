import { build } from 'esbuild';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import * as path from 'node:path';
import { spawnSync } from 'node:child_process';
import * as realBase64 from '@stablelib/base64';
import * as realSha256 from 'fast-sha256';
import { Webhook } from 'standardwebhooks';
import * as native from '../../../lambdas/adapters/native-webhook-crypto';
import * as realDiscovery from '@aws-sdk/middleware-endpoint-discovery';
import { readdirSync, readFileSync } from 'node:fs';
import * as noDiscovery from '../../../lambdas/adapters/no-endpoint-discovery';
import { EventStreamSerde, eventStreamSerdeProvider } from '../../../lambdas/adapters/no-event-streams';
import { RELAY_BUNDLE_TARGET, relayEsbuildAliases } from '../../../lib/constructs/relay-bundling';

const ROOT = path.resolve(__dirname, '..', '..', '..');

describe('Bundle stand-ins (esbuild aliases of lib/constructs/relay-bundling.ts)', () => {
  it('no-endpoint-discovery: the same exports as the real package, discovery off and never read from the environment', async () => {
    // Prepare
    const input = { endpointDiscoveryEnabledProvider: () => Promise.resolve(true) };
    // Act
    const resolved = noDiscovery.resolveEndpointDiscoveryConfig(input, { endpointDiscoveryCommandCtor: Object });
    // Assess
    expect(Object.keys(realDiscovery)).toEqual(expect.arrayContaining(Object.keys(noDiscovery)));
    expect(resolved).toBe(input);
    await expect(resolved.endpointDiscoveryEnabled()).resolves.toBe(false);
    expect(resolved.isClientEndpointDiscoveryEnabled).toBe(false);
    expect(noDiscovery.NODE_ENDPOINT_DISCOVERY_CONFIG_OPTIONS.environmentVariableSelector()).toBeUndefined();
  });

  it('no-endpoint-discovery: no DynamoDB command imports the discovery plugin (the stand-in would drop it)', () => {
    const commands = path.join(ROOT, 'node_modules/@aws-sdk/client-dynamodb/dist-es/commands');
    const users = readdirSync(commands).filter((file) =>
      readFileSync(path.join(commands, file), 'utf8').includes('middleware-endpoint-discovery'),
    );
    expect(readdirSync(commands).length).toBeGreaterThan(20);
    expect(users).toEqual([]);
  });

  it('no-event-streams: fails loudly if an event-stream operation is ever called', () => {
    expect(() => new EventStreamSerde()).toThrow(/event streams are not bundled/);
    expect(() => eventStreamSerdeProvider()).toThrow(/event streams are not bundled/);
  });

  it('keeps endpoint discovery (mnemonist, the endpoint cache) and the event-stream codec out of a bundle', async () => {
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
        /node_modules\/(mnemonist|obliterator|@aws-sdk\/endpoint-cache|@aws-sdk\/middleware-endpoint-discovery)\/|submodules\/event-streams\//.test(
          p,
        ),
      ),
    ).toEqual([]);
    expect(inputs).toEqual(
      expect.arrayContaining(['lambdas/adapters/no-endpoint-discovery.ts', 'lambdas/adapters/no-event-streams.ts']),
    );
  }, 30_000);

  it('native-webhook-crypto: the same HMAC and base64 as fast-sha256 and @stablelib/base64, and as strict on bad base64', () => {
    for (const size of [0, 1, 2, 3, 31, 32, 33, 64, 1000]) {
      const bytes = Uint8Array.from({ length: size }, (_, i) => (i * 37 + size) % 256);
      const key = Uint8Array.from({ length: 24 + (size % 40) }, (_, i) => (i * 11) % 256);
      expect(native.hmac(key, bytes)).toEqual(realSha256.hmac(key, bytes));
      const text = realBase64.encode(bytes);
      expect(native.encode(bytes)).toBe(text);
      expect(native.decode(text)).toEqual(realBase64.decode(text));
    }
    for (const bad of ['abc', 'ab!d', 'a===']) {
      expect(() => realBase64.decode(bad)).toThrow();
      expect(() => native.decode(bad)).toThrow();
    }
  });

  it('a bundle signs and verifies Standard Webhooks deliveries exactly as the standardwebhooks package does unbundled', async () => {
    // Prepare: a probe bundled with the relay's aliases, run as the Lambda would run it (ESM, node).
    const dir = mkdtempSync(path.join(tmpdir(), 'swh-bundle-'));
    const secret = `whsec_${Buffer.alloc(32, 7).toString('base64')}`;
    const at = new Date(1_750_000_000_000);
    try {
      const result = await build({
        stdin: {
          contents: `import { Webhook } from 'standardwebhooks';
            globalThis.sign = (s, id, at, body) => new Webhook(s).sign(id, at, body);
            globalThis.verify = (s, body, headers) => new Webhook(s).verify(body, headers, { jsonParse: false });`,
          resolveDir: ROOT,
          loader: 'js',
        },
        bundle: true,
        write: false,
        platform: 'node',
        format: 'esm',
        target: RELAY_BUNDLE_TARGET,
        metafile: true,
        logLevel: 'silent',
        minify: true,
        mainFields: ['module', 'main'],
        alias: { ...relayEsbuildAliases(ROOT) },
      });
      const inputs = Object.keys(result.metafile.inputs);
      expect(inputs.filter((p) => /node_modules\/(fast-sha256|@stablelib)\//.test(p))).toEqual([]);
      expect(inputs).toContain('lambdas/adapters/native-webhook-crypto.ts');
      const file = path.join(dir, 'probe.mjs');
      const now = new Date();
      const headers = {
        'webhook-id': 'cb_2',
        'webhook-timestamp': String(Math.floor(now.getTime() / 1000)),
        'webhook-signature': new Webhook(secret).sign('cb_2', now, '{}'),
      };
      const tries = (body: string) =>
        `(() => { try { verify(${JSON.stringify(secret)}, ${JSON.stringify(body)}, ${JSON.stringify(headers)}); return true; } catch { return false; } })()`;
      writeFileSync(
        file,
        `${result.outputFiles[0].text}
        console.log(JSON.stringify({ signature: sign(${JSON.stringify(secret)}, 'cb_1', new Date(${at.getTime()}), '{"success":true}'), good: ${tries('{}')}, tampered: ${tries('{ }')} }));`,
      );
      // Act: run it as the Lambda runtime would (ESM on node)
      const run = spawnSync(process.execPath, [file], { encoding: 'utf8' });
      // Assess
      expect(run.stderr).toBe('');
      expect(JSON.parse(run.stdout)).toEqual({
        signature: new Webhook(secret).sign('cb_1', at, '{"success":true}'),
        good: true,
        tampered: false,
      });
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  }, 30_000);
});
