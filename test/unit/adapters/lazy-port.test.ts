/** A port whose adapter is loaded on first use (issue 40 §1): loaded once, on first call, retried after a failed load. */
import { lazyPort } from '../../../lambdas/adapters/lazy-port';

interface Counter {
  add(n: number): Promise<number>;
  total(): Promise<number>;
}

const counter = (): Counter => {
  let sum = 0;
  return {
    add: async (n) => (sum += n),
    total: async () => sum,
  };
};

describe('lazyPort', () => {
  it('loads nothing until a method is called, then loads once and delegates every call', async () => {
    const load = jest.fn(async () => counter());
    const port = lazyPort<Counter, 'add' | 'total'>(load, ['add', 'total']);
    expect(load).not.toHaveBeenCalled();
    await Promise.all([port.add(2), port.add(3)]);
    expect(await port.total()).toBe(5);
    expect(load).toHaveBeenCalledTimes(1);
  });

  it('keeps `this`: a class adapter’s methods see their instance', async () => {
    class Store {
      private readonly items: string[] = [];
      public async put(item: string): Promise<number> {
        this.items.push(item);
        return this.items.length;
      }
    }
    const port = lazyPort<Store, 'put'>(async () => new Store(), ['put']);
    await port.put('a');
    expect(await port.put('b')).toBe(2);
  });

  it('answers a failed load with its error and loads again on the next call', async () => {
    const load = jest
      .fn<Promise<Counter>, []>()
      .mockRejectedValueOnce(new Error('chunk missing'))
      .mockResolvedValue(counter());
    const port = lazyPort<Counter, 'add'>(load, ['add']);
    await expect(port.add(1)).rejects.toThrow('chunk missing');
    await expect(port.add(1)).resolves.toBe(1);
    expect(load).toHaveBeenCalledTimes(2);
  });

  it('has only the methods it was given', () => {
    const port = lazyPort<Counter, 'add'>(async () => counter(), ['add']);
    expect(Object.keys(port)).toEqual(['add']);
  });
});
