/**
 * `gpu-relay env`: the local relay's URL and secrets as one shell line,
 * `export GPU_RELAY_URL=… GPU_RELAY_SECRET=… CALLBACK_SIGNING_SECRET=…`, for `eval "$(npx gpu-relay env)"`
 * before signing by hand (curl, the examples). It prints secrets on purpose, so it only reads a local
 * relay's card (loopback, private file, live process) and writes to stdout alone.
 */
import type { Values } from './args';
import { usageError } from './commands';
import { localRelayFor } from './connection';
import { EXIT_OK } from './output';

/** A value as one shell word: bare when it is safe, else single-quoted. */
const shellWord = (value: string): string =>
  /^[A-Za-z0-9_./:+=@%,-]+$/.test(value) ? value : `'${value.replace(/'/g, `'\\''`)}'`;

export const runEnv = (values: Values, positionals: readonly string[]): number => {
  if (positionals.length) throw usageError('env', `unexpected argument '${positionals[0]}'`);
  const url = values.url ?? process.env.GPU_RELAY_URL;
  const local = localRelayFor('env', url);
  if (!local)
    throw usageError(
      'env',
      url === undefined
        ? 'no local relay is running here: start one with npm start (it writes .relay/local-<port>.json)'
        : `no local relay of this folder listens at ${url}: its npm start writes .relay/local-<port>.json`,
    );
  const line = `export GPU_RELAY_URL=${shellWord(local.url)} GPU_RELAY_SECRET=${shellWord(local.secret)} CALLBACK_SIGNING_SECRET=${shellWord(local.callbackSecret)}\n`;
  // Not out(): it hides every known secret, and printing these is this command's whole job.
  process.stdout.write(line);
  return EXIT_OK;
};
