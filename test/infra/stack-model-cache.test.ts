/**
 * The local runtime may read the stack model from its cache (local/stack-model-cache.ts) only if the
 * model survives JSON exactly: what a cached start enforces and runs is what a synthesis yields.
 */
import { synthesizeStackModel } from '../../local/stack-model';

describe('the synthesized stack model', () => {
  it('is plain data: a JSON copy is strictly equal to it (the cache loses nothing)', () => {
    const model = synthesizeStackModel();
    expect(model.functions.length).toBeGreaterThan(20);
    expect(JSON.parse(JSON.stringify(model))).toStrictEqual(model);
  });
});
