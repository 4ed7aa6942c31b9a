import { build } from 'esbuild';
import * as path from 'node:path';
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
      bundle: true, write: false, platform: 'node', format: 'esm', target: RELAY_BUNDLE_TARGET, metafile: true, logLevel: 'silent',
      mainFields: ['module', 'main'], alias: { ...relayEsbuildAliases(ROOT) },
    });
    const inputs = Object.keys(result.metafile.inputs);
    expect(inputs.filter((p) => /node_modules\/(mnemonist|obliterator)\/|submodules\/event-streams\//.test(p))).toEqual([]);
    expect(inputs).toEqual(expect.arrayContaining(['lambdas/adapters/lru-cache.ts', 'lambdas/adapters/no-event-streams.ts']));
  }, 30_000);
});
