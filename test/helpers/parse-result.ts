/** Reads an API handler's structured result. */
export interface ParsedResult {
  readonly statusCode: number;
  readonly headers: Record<string, string>;
  readonly body: Record<string, unknown>;
}

/** Reads a handler's structured result; fails the test when the body is not JSON. */
export const parseResult = (result: unknown): ParsedResult => {
  const r = result as { statusCode: number; headers?: Record<string, string>; body?: string };
  return {
    statusCode: r.statusCode,
    headers: r.headers ?? {},
    body: (r.body ? JSON.parse(r.body) : null) as Record<string, unknown>,
  };
};
