/**
 * The API's error shaping, around @middy/http-error-handler (register it LAST, so its onError runs
 * first). Every error answer is JSON `{ "error": text }` with Content-Type application/json;
 * unexpected errors become 500 `{"error":"Internal error"}` with no stack or detail, and are logged.
 * Log levels (docs/operations.md "Logs"): a 4xx is the caller's mistake, WARN with the answer's text and
 * no stack; a fault (5xx) is ERROR with its stack, or WARN when a middleware already logged its cause.
 */
import type middy from '@middy/core';
import httpErrorHandler from '@middy/http-error-handler';
import { logger } from '../adapters/observability';
import { HAND_OFF_FAILED_MESSAGE, HandOffError } from '../domain/errors';
import { httpError } from './http';

export const INTERNAL_ERROR_BODY = JSON.stringify({ error: 'Internal error' });

interface MaybeHttpError {
  name?: string;
  message?: string;
  statusCode?: number;
  expose?: boolean;
}

const isJsonErrorBody = (message: string | undefined): boolean => {
  if (!message) return false;
  try {
    const parsed = JSON.parse(message) as unknown;
    return typeof parsed === 'object' && parsed !== null && typeof (parsed as { error?: unknown }).error === 'string';
  } catch {
    return false;
  }
};

/** The `error` text of a JSON error body. */
const errorTextOf = (body: string): string => (JSON.parse(body) as { error: string }).error;

export const errorHandler = (): middy.MiddlewareObj => {
  const inner = httpErrorHandler({
    // Our own logging below decides the level; the inner handler must not print to stderr.
    logger: false,
    fallbackMessage: INTERNAL_ERROR_BODY,
  });
  const onError: middy.MiddlewareFn = async (request) => {
    if (request.response !== undefined && request.response !== null) return;
    const error = request.error as (Error & MaybeHttpError) | null;
    if (error instanceof HandOffError) {
      logger.error('hand-off failed; nothing was queued', { error });
      request.error = httpError(503, HAND_OFF_FAILED_MESSAGE);
    } else if (error && typeof error.statusCode === 'number' && error.statusCode < 500 && error.expose !== false) {
      // A thrown 4xx with a plain-text message still gets the JSON shape.
      if (!isJsonErrorBody(error.message))
        error.message = JSON.stringify({ error: error.message || 'Request rejected' });
      // The caller's mistake: WARN with the answer's text, no stack (nothing here is broken).
      logger.warn('request refused', { statusCode: error.statusCode, error: errorTextOf(error.message) });
    } else if (
      error &&
      typeof error.statusCode === 'number' &&
      error.expose === true &&
      isJsonErrorBody(error.message)
    ) {
      // A fault we answer in our own words (503 "retry later"): its cause was logged at ERROR where it
      // was caught; this line only records the answer.
      logger.warn('request failed', { statusCode: error.statusCode, error: errorTextOf(error.message) });
    } else {
      logger.error('unexpected error', { error });
    }
    await inner.onError?.(request);
    // Whatever happened above, the body is JSON.
    const response = request.response as
      { headers?: Record<string, string | number | boolean>; body?: string } | null | undefined;
    if (response) {
      response.headers = { ...(response.headers ?? {}), 'Content-Type': 'application/json' };
      if (!isJsonErrorBody(response.body)) response.body = INTERNAL_ERROR_BODY;
    }
  };
  return { name: 'errorHandler', onError };
};
