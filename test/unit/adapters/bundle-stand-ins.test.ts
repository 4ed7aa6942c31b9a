import { build } from 'esbuild';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import * as path from 'node:path';
import { spawnSync } from 'node:child_process';
import * as realBase64 from '@stablelib/base64';
import * as realSha256 from 'fast-sha256';
import { Webhook } from 'standardwebhooks';
import * as native from '../../../lambdas/adapters/native-webhook-crypto';
import LRUCache from '../../../lambdas/adapters/lru-cache';
import { EventStreamSerde, eventStreamSerdeProvider } from '../../../lambdas/adapters/no-event-streams';
import { RELAY_BUNDLE_TARGET, relayEsbuildAliases } from '../../../lib/constructs/relay-bundling';

const ROOT = path.resolve(__dirname, '..', '..', '..');

describe('Bundle stand-ins (esbuild aliases of lib/constructs/relay-bundling.ts)', () => {
  it('lru-cache: evicts the least recently used; get refreshes recency, peek does not', () => {
    // Prepare
    const cache = new LRUCache<string, number>(2);
    cache.set('a', 1).set('b', 2);
    // Act
    cache.get('a');
    cache.set('c', 3);
    // Assess
    expect([cache.has('a'), cache.has('b'), cache.has('c'), cache.size]).toEqual([true, false, true, 2]);
    cache.peek('a');
    cache.set('d', 4);
    expect([cache.has('a'), cache.peek('c'), cache.get('d')]).toEqual([false, 3, 4]);
    cache.clear();
    expect(cache.size).toBe(0);
  });

  it('no-event-streams: fails loudly if an event-stream operation is ever called', () => {
    expect(() => new EventStreamSerde()).toThrow(/event streams are not bundled/);
    expect(() => eventStreamSerdeProvider()).toThrow(/event streams are not bundled/);
  });

  it('keeps mnemonist and the event-stream codec out of a bundle', async () => {
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
    expect(inputs.filter((p) => /node_modules\/(mnemonist|obliterator)\/|submodules\/event-streams\//.test(p))).toEqual(
      [],
    );
    expect(inputs).toEqual(
      expect.arrayContaining(['lambdas/adapters/lru-cache.ts', 'lambdas/adapters/no-event-streams.ts']),
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
