/** `verify`: checks a received callback's Standard Webhooks signature (the exact body on stdin). */
import type { Values } from './args';
import { callbackSecretOf, callbackVerifier, deliveryProblem } from './callback-listener';
import { usageError } from './commands';
import { EXIT_OK, EXIT_TASK_FAILED, out, pretty } from './output';

const readStdin = async (): Promise<Buffer> => {
  if (process.stdin.isTTY) throw usageError('verify', 'pipe the exact callback body on stdin');
  const chunks: Buffer[] = [];
  for await (const chunk of process.stdin) chunks.push(chunk as Buffer);
  return Buffer.concat(chunks);
};

export const runVerify = async (values: Values, positionals: readonly string[]): Promise<number> => {
  if (positionals.length) throw usageError('verify', `unexpected argument '${positionals[0]}'`);
  const verifier = callbackVerifier('verify', callbackSecretOf(values));
  for (const [flag, header] of [
    ['id', 'webhook-id'],
    ['timestamp', 'webhook-timestamp'],
    ['signature', 'webhook-signature'],
  ] as const) {
    if (!values[flag]) throw usageError('verify', `--${flag} is required (the ${header} header)`);
  }
  const { id = '', timestamp = '', signature = '' } = values;
  if (!/^\d{1,12}$/.test(timestamp)) throw usageError('verify', `--timestamp must be Unix seconds, got '${timestamp}'`);
  const body = await readStdin();

  const verdict = (valid: boolean, reason?: string): number => {
    out(pretty(valid ? { valid: true } : { valid: false, reason }));
    return valid ? EXIT_OK : EXIT_TASK_FAILED;
  };
  const headers = { 'webhook-id': id, 'webhook-timestamp': timestamp, 'webhook-signature': signature.trim() };
  const problem = deliveryProblem(verifier, headers, body);
  if (problem === 'signature does not match' && body.length && body[body.length - 1] === 0x0a) {
    return verdict(false, `${problem}; the body ends with a newline: pass the exact bytes (printf '%s', not echo)`);
  }
  return verdict(problem === null, problem ?? undefined);
};
