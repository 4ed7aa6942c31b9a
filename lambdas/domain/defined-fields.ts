/**
 * Copying optional fields without writing `undefined`: what `...(x.a !== undefined ? { a: x.a } : {})`
 * says once a field, said once for a list of fields.
 */

/** The fields of `source` named in `keys` whose value is defined, in the order of `keys`; an undefined or absent one is left out. */
export const definedFields = <T extends object, K extends keyof T>(
  source: T,
  keys: readonly K[],
): Partial<Pick<T, K>> => {
  const fields: Partial<Pick<T, K>> = {};
  for (const key of keys) if (source[key] !== undefined) fields[key] = source[key];
  return fields;
};
