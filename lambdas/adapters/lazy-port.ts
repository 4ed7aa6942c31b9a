/**
 * A port whose adapter is loaded on first use (issue 40 §1): `load` imports the adapter's module with
 * `import()`, which the bundler splits into a chunk of its own (relayBundleOptions: `splitting`), so a
 * function's cold start does not parse what only a rare path runs (a standing order's admission, an
 * extension's reservation, a workflow started by a price alert). The first call of any method loads
 * the chunk (once per instance; a load that fails is retried on the next call) and every call is
 * delegated to the adapter, so callers see the port unchanged. Only for ports whose methods all
 * return promises: a synchronous method could not wait for the chunk.
 */
export type AsyncMethodsOf<T> = {
  [K in keyof T]-?: T[K] extends ((...args: never[]) => Promise<unknown>) | undefined ? K : never;
}[keyof T];

export const lazyPort = <T, K extends AsyncMethodsOf<T>>(load: () => Promise<T>, methods: readonly K[]): Pick<T, K> => {
  let loading: Promise<T> | undefined;
  const adapter = (): Promise<T> => {
    loading ??= load().catch((error: unknown) => {
      loading = undefined;
      throw error;
    });
    return loading;
  };
  const port: Partial<Record<K, unknown>> = {};
  for (const method of methods) {
    port[method] = async (...args: unknown[]): Promise<unknown> => {
      const target = await adapter();
      const fn = target[method] as unknown as (...a: unknown[]) => Promise<unknown>;
      return fn.apply(target, args);
    };
  }
  return port as Pick<T, K>;
};
