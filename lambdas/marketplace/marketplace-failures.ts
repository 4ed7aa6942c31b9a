/**
 * How a marketplace call's failure is classified (marketplace-api.md §3, marketplace-live.md): a
 * non-zero result code becomes its typed domain error; a failure without one (network, timeout, HTTP
 * status) is a TransportFailure that says whether the request may have reached the server.
 */
import {
  MarketplaceAuthError,
  MarketplaceDatabaseError,
  MarketplaceEndpointError,
  MarketplaceError,
  MarketplaceInvalidInputError,
  MarketplaceRateLimitedError,
  MarketplaceRejectedError,
} from '../domain/errors';
import { ResultCode, type Envelope } from './schemas';

/** A failure with no result code; `maybeSent` says whether the request may have reached the server. */
export class TransportFailure {
  public constructor(
    public readonly message: string,
    public readonly maybeSent: boolean,
    public readonly cause?: unknown,
  ) {}
}

// Errors that prove the request never left this host: the connection was never established.
export const NOT_SENT_CODES = new Set([
  'ECONNREFUSED',
  'ENOTFOUND',
  'EAI_AGAIN',
  'UND_ERR_CONNECT_TIMEOUT',
  'EHOSTUNREACH',
  'ENETUNREACH',
]);

export const errorCodes = (error: unknown): string[] => {
  const codes: string[] = [];
  let current: unknown = error;
  for (let depth = 0; current && depth < 5; depth += 1) {
    const code = (current as { code?: unknown }).code;
    if (typeof code === 'string') codes.push(code);
    // AggregateError (happy eyeballs) hides the connect errors in `errors`.
    const inner = (current as { errors?: unknown }).errors;
    if (Array.isArray(inner)) inner.forEach((e) => codes.push(...errorCodes(e)));
    current = (current as { cause?: unknown }).cause;
  }
  return codes;
};

/** Maps a non-zero result code to its typed domain error; code 6 keeps the numbers that came with it. */
export const errorForResultCode = (
  code: number,
  error: string | undefined,
  endpoint: string,
  envelope: Partial<Envelope> = {},
): MarketplaceError => {
  switch (code) {
    case ResultCode.DatabaseError:
      return new MarketplaceDatabaseError(`marketplace database error on ${endpoint}`);
    case ResultCode.InvalidInput:
      return new MarketplaceInvalidInputError(`marketplace rejected the input of ${endpoint}`);
    case ResultCode.InvalidApiKey:
      return new MarketplaceAuthError();
    case ResultCode.InvalidEndpoint:
      return new MarketplaceEndpointError(`marketplace endpoint ${endpoint} invalid`);
    case ResultCode.RateLimited:
      return new MarketplaceRateLimitedError();
    case ResultCode.SeeError:
      return new MarketplaceRejectedError(error ?? 'unknown', {
        ...(envelope.min_price !== undefined ? { min_price: envelope.min_price } : {}),
        ...(envelope.max_step !== undefined ? { max_step: envelope.max_step } : {}),
        ...(envelope.time_to_lowering !== undefined ? { time_to_lowering: envelope.time_to_lowering } : {}),
      });
    default:
      return new MarketplaceError(`marketplace answered unknown result code ${code} on ${endpoint}`, code);
  }
};
