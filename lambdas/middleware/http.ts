/**
 * HTTP helpers shared by the relay's middlewares and API handlers: the event type they pass along,
 * header lookup, and errors/responses that always carry a JSON `{ "error" }` body.
 */
import { createError } from '@middy/util';
import type { APIGatewayProxyEventV2, APIGatewayProxyStructuredResultV2 } from 'aws-lambda';
import type { Caller } from '../domain/teams/caller-keys';
import type { SignatureVersion } from '../domain/signing';

/**
 * The API Gateway v2 event as it travels through the chain: `rawBody` is the decoded body bytes (set
 * by the body middleware, used for the signature), `jsonBody` the parsed JSON object (set after the
 * signature check by the JSON middleware).
 */
export type RelayEvent = APIGatewayProxyEventV2 & {
  rawBody?: Buffer;
  jsonBody?: Record<string, unknown>;
  /** The verified caller key (set by the signature middleware; issue 24). */
  caller?: Caller;
  /** The verified X-Webhook-Signature (set by the signature middleware; the replay claim reads it). */
  signature?: {
    readonly version: SignatureVersion;
    readonly hex: string;
    readonly timestamp?: string;
    readonly keyId?: string;
  };
};

export type ApiResult = APIGatewayProxyStructuredResultV2;

/**
 * A header value by case-insensitive name. API Gateway v2 lower-cases header names, but tests,
 * other integrations and hand-built events may not.
 */
export const headerValue = (event: Pick<APIGatewayProxyEventV2, 'headers'>, name: string): string | undefined => {
  const headers = event.headers ?? {};
  const wanted = name.toLowerCase();
  if (headers[wanted] !== undefined) return headers[wanted];
  for (const [key, value] of Object.entries(headers)) if (key.toLowerCase() === wanted) return value;
  return undefined;
};

/** The decoded body bytes: what the body middleware stored, else the event's body decoded here. */
export const rawBodyOf = (event: RelayEvent): Buffer =>
  event.rawBody ?? Buffer.from(event.body ?? '', event.isBase64Encoded ? 'base64' : 'utf8');

/**
 * An HTTP error for http-error-handler whose message is already the JSON body `{ "error": text }`.
 * `expose` is set explicitly, so 5xx errors we mean to show (503) are not replaced by the fallback.
 */
export const httpError = (statusCode: number, error: string, headers?: Record<string, string>): Error => {
  const err = createError(statusCode, JSON.stringify({ error }), { expose: true }) as Error & {
    headers?: Record<string, string>;
  };
  if (headers) err.headers = headers;
  return err;
};

/** A JSON response. */
export const jsonResponse = (statusCode: number, body: unknown, headers: Record<string, string> = {}): ApiResult => ({
  statusCode,
  headers: { 'Content-Type': 'application/json', ...headers },
  body: JSON.stringify(body),
});
