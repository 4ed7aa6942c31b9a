/**
 * Paged GET routes (issue 38 §5): `limit` (a positive integer up to the route's most) and `next`, an
 * opaque cursor the route answered (base64url of a small JSON value; a caller must not build one).
 */
import type { RelayEvent } from '../../middleware/http';

/** A query parameter, from the parsed map or the raw query string. */
export const queryParam = (event: RelayEvent, name: string): string | undefined => {
  const fromMap = event.queryStringParameters?.[name];
  if (fromMap !== undefined) return fromMap;
  return new URLSearchParams(event.rawQueryString ?? '').get(name) ?? undefined;
};

/** The page size asked for (`max` when absent), or the 400 text. */
export const pageLimit = (raw: string | undefined, max: number, fallback: number = max): number | string => {
  if (raw === undefined) return fallback;
  const n = /^\d{1,6}$/.test(raw) ? Number(raw) : NaN;
  return Number.isInteger(n) && n >= 1 && n <= max ? n : `limit must be an integer from 1 to ${max}`;
};

export const encodeCursor = (value: unknown): string => Buffer.from(JSON.stringify(value)).toString('base64url');

/** The cursor's value, or undefined when it is none this relay wrote. */
export const decodeCursor = (raw: string): unknown => {
  if (!/^[A-Za-z0-9_-]{1,200}$/.test(raw)) return undefined;
  try {
    return JSON.parse(Buffer.from(raw, 'base64url').toString('utf8')) as unknown;
  } catch {
    return undefined;
  }
};
