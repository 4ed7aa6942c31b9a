/**
 * Loose checks of values a store reads back from its own items (map entries, attributes), before
 * it uses them as its types: the named fields have the named `typeof`, other fields are not checked.
 * Small on purpose: the bundles that read these items carry no schema library for them.
 */

/** The `typeof` a stored field must have. */
export type StoredType = 'string' | 'number' | 'boolean';

/** Whether `value` is an object whose fields named in `fields` have those types. */
export const hasFields = <T>(value: unknown, fields: { readonly [K in keyof T]?: StoredType }): value is T =>
  typeof value === 'object' &&
  value !== null &&
  Object.entries(fields).every(([name, type]) => typeof (value as Record<string, unknown>)[name] === type);
