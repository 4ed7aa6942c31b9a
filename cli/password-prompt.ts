/**
 * Reads one secret line: from the terminal without echo (stderr shows the prompt), or, when stdin is
 * not a terminal, the first line of stdin (`printf '%s\n' "$PW" | gpu-relay create-order … --password-prompt`).
 */
import { CliError } from './output';

let piped: Promise<string> | undefined;

/** All of stdin, read once (a pipe can be read only once; later calls get the same text). */
const readStdin = (): Promise<string> =>
  (piped ??= new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    process.stdin.on('data', (chunk: Buffer) => chunks.push(chunk));
    process.stdin.on('end', () => resolve(Buffer.concat(chunks).toString('utf8')));
    process.stdin.on('error', reject);
  }));

const fromTerminal = (prompt: string): Promise<string | undefined> =>
  new Promise((resolve, reject) => {
    const stdin = process.stdin;
    process.stderr.write(prompt);
    let line = '';
    const finish = (value: string | undefined, error?: Error): void => {
      stdin.off('data', onData);
      stdin.setRawMode(false);
      stdin.pause();
      process.stderr.write('\n');
      if (error) reject(error);
      else resolve(value);
    };
    const onData = (chunk: Buffer): void => {
      for (const char of chunk.toString('utf8')) {
        if (char === '\r' || char === '\n') return finish(line);
        if (char === '\u0003') return finish(undefined, new CliError('interrupted', 130));
        if (char === '\u0004') return finish(line === '' ? undefined : line);
        if (char === '\u007f' || char === '\b') line = line.slice(0, -1);
        else if (char >= ' ') line += char;
      }
    };
    stdin.setRawMode(true);
    stdin.resume();
    stdin.on('data', onData);
  });

/** The line typed (or piped), without its line end; undefined when there is none. */
export const readSecretLine = async (prompt: string): Promise<string | undefined> => {
  if (process.stdin.isTTY) return fromTerminal(prompt);
  const text = await readStdin();
  const [first] = text.split(/\r?\n/);
  return text === '' ? undefined : first;
};
