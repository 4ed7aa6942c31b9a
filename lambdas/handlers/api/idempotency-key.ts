/** The Idempotency-Key request header of the task-accepting webhook routes. */
import { headerValue, httpError, type RelayEvent } from '../../middleware/http';

/** Longest accepted Idempotency-Key. */
export const MAX_IDEMPOTENCY_KEY_LENGTH = 200;

/** The Idempotency-Key header: 1..200 printable ASCII characters, else 400. Absent → undefined. */
export const idempotencyKeyOf = (event: RelayEvent): string | undefined => {
  const key = headerValue(event, 'Idempotency-Key');
  if (key === undefined) return undefined;
  if (key.length === 0 || key.length > MAX_IDEMPOTENCY_KEY_LENGTH || !/^[\x20-\x7e]+$/.test(key) || key.trim() === '') {
    throw httpError(400, `Idempotency-Key must be 1 to ${MAX_IDEMPOTENCY_KEY_LENGTH} printable characters`);
  }
  return key;
};
