/**
 * JSON body parsing, after the signature check (the signature covers the raw bytes). An empty body
 * counts as `{}`, so a body-less POST gets the route's own "required" message rather than a parse
 * error; anything else must be a JSON object.
 */
import type middy from '@middy/core';
import { httpError, rawBodyOf, type RelayEvent } from './http';

export const jsonBody = (): middy.MiddlewareObj<RelayEvent> => {
  const before: middy.MiddlewareFn<RelayEvent> = async ({ event }) => {
    // A UTF-8 byte order mark is not JSON, but some clients send one.
    const text = rawBodyOf(event)
      .toString('utf8')
      .replace(/^\uFEFF/, '');
    if (text.trim() === '') {
      event.jsonBody = {};
      return;
    }
    let parsed: unknown;
    try {
      parsed = JSON.parse(text);
    } catch {
      throw httpError(400, 'Invalid JSON body');
    }
    if (typeof parsed !== 'object' || parsed === null || Array.isArray(parsed)) {
      throw httpError(400, 'JSON body must be an object');
    }
    event.jsonBody = parsed as Record<string, unknown>;
  };
  return { name: 'jsonBody', before };
};
