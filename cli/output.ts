/**
 * What the CLI prints: one-line errors with exit codes, stdout/stderr writers that never print a known
 * secret, the progress line, and how a relay answer is shown.
 */
export const EXIT_OK = 0;
export const EXIT_TASK_FAILED = 1;
export const EXIT_USAGE = 2;

/** A failure that ends the command with `exitCode` and a one-line message. */
export class CliError extends Error {
  readonly exitCode: number;

  constructor(message: string, exitCode: number = EXIT_USAGE) {
    super(message);
    this.name = 'CliError';
    this.exitCode = exitCode;
  }
}

// Every string that leaves the process goes through redact(): the secret must never be printed,
// not even when a user pastes it into the wrong place and an error message echoes it back.
const secretsToHide: string[] = [];

/** Registers a secret to hide in everything the CLI prints from now on. */
export const hideSecret = (secret: string | undefined): void => {
  if (secret) secretsToHide.push(secret);
};

/** Hides a callback secret in output with and without its whsec_ prefix (the key is the base64 part). */
export const hideCallbackSecret = (secret: string | undefined): void => {
  if (!secret) return;
  secretsToHide.push(secret);
  if (secret.startsWith('whsec_') && secret.length > 'whsec_'.length) secretsToHide.push(secret.slice('whsec_'.length));
};

export const redact = (text: unknown): string => {
  let result = String(text);
  for (const s of secretsToHide) if (s) result = result.split(s).join('***');
  return result;
};

export const out = (text: unknown): void => {
  process.stdout.write(redact(text) + '\n');
};
export const err = (text: unknown): void => {
  process.stderr.write(redact(text) + '\n');
};

export const pretty = (value: unknown): string => JSON.stringify(value, null, 2);

/** A relay answer as the CLI keeps it: status, headers, raw text and the parsed JSON (if any). */
export interface Answer {
  readonly status: number;
  readonly headers: Headers;
  readonly text: string;
  // The relay's JSON, read field by field where it is used.
  // eslint-disable-next-line @typescript-eslint/no-explicit-any
  readonly json: any;
}

/** Prints the answer; a non-2xx answer becomes a CliError (exit 2) naming status and error. */
export const printAnswer = (
  command: string,
  res: Answer,
  { quietBody = false }: { quietBody?: boolean } = {},
): void => {
  if (res.status >= 200 && res.status < 300) {
    if (!quietBody) out(res.json === undefined ? res.text : pretty(res.json));
    return;
  }
  if (res.text) out(res.json === undefined ? res.text : pretty(res.json));
  const reason = typeof res.json?.error === 'string' ? res.json.error : res.text.slice(0, 200) || 'no body';
  const retry =
    res.status === 429 && res.headers.get('retry-after') ? ` (retry after ${res.headers.get('retry-after')} s)` : '';
  throw new CliError(`${command} failed: HTTP ${res.status}: ${reason}${retry}`);
};

export const isFailedResult = (result: unknown): boolean =>
  result === null ||
  typeof result !== 'object' ||
  (result as { success?: unknown }).success === false ||
  'error' in result;

/** Writes a progress line on stderr: rewritten in place on a terminal, one line per tick otherwise. */
export const progress = (() => {
  let last = '';
  return {
    show(text: string): void {
      if (process.stderr.isTTY) process.stderr.write(`\r\x1b[2K${redact(text)}`);
      else err(text);
      last = text;
    },
    done(): void {
      if (process.stderr.isTTY && last) process.stderr.write('\n');
      last = '';
    },
  };
})();
