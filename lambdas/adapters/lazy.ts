/**
 * The one memoizer of the wiring: a value built on first call, once per Lambda instance (so
 * importing a handler module needs no AWS and no env). A build that throws is retried next call.
 */
export const lazy = <T>(build: () => T): (() => T) => {
  let built: { value: T } | undefined;
  return () => {
    built ??= { value: build() };
    return built.value;
  };
};
