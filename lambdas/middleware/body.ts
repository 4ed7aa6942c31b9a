/**
 * Body size limit and decoding. API Gateway sends non-text bodies (form posts, bodies without a
 * Content-Type) base64-encoded; the signature covers the raw bytes, so they are decoded once here
 * and kept on the event.
 */
import type middy from '@middy/core';
import { httpError, type RelayEvent } from './http';

/** Largest accepted body (decoded bytes). */
export const MAX_BODY_BYTES = 64 * 1024;

export interface BodyOptions {
  /** @default MAX_BODY_BYTES */
  readonly maxBytes?: number;
}

/** 413 `Request body too large (max N bytes)` for bodies over the limit; stores `event.rawBody`. */
export const decodeBody = (options: BodyOptions = {}): middy.MiddlewareObj<RelayEvent> => {
  const maxBytes = options.maxBytes ?? MAX_BODY_BYTES;
  const tooLarge = () => httpError(413, `Request body too large (max ${maxBytes} bytes)`);
  const before: middy.MiddlewareFn<RelayEvent> = async ({ event }) => {
    const body = event.body ?? '';
    if (event.isBase64Encoded) {
      // Reject on the encoded length first, so a huge body is never decoded (4 chars carry 3 bytes).
      if (Math.floor((body.length * 3) / 4) > maxBytes + 3) throw tooLarge();
      const raw = Buffer.from(body, 'base64');
      if (raw.length > maxBytes) throw tooLarge();
      event.rawBody = raw;
      return;
    }
    if (body.length > maxBytes) throw tooLarge(); // every UTF-16 unit is at least one UTF-8 byte
    const raw = Buffer.from(body, 'utf8');
    if (raw.length > maxBytes) throw tooLarge();
    event.rawBody = raw;
  };
  return { name: 'decodeBody', before };
};
