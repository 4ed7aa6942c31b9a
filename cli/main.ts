/**
 * gpu-relay: command-line client of the GPU Order Relay (entry point; bin/gpu-relay.mjs loads it).
 *
 * Signs the exact bytes it sends (signature v2 by default: `v2=` + HMAC-SHA256 hex over
 * `v2.<timestamp>.<METHOD>.<path>.<body>`; `--signature v1` for old relays),
 * prints the relay's answer, and can wait for the task's result through a callback to a local
 * listener (verified per Standard Webhooks with the callback signing secret) or by polling
 * GET /webhook/tasks/{task_id}.
 *
 * Exit codes: 0 success, 1 task failed (or a callback signature did not verify), 2 usage or HTTP error.
 */
import { parseCommandLine } from './args';
import { HELP, commandSpec } from './commands';
import { runEnv } from './env-command';
import { runKeys } from './keys';
import { CliError, EXIT_OK, EXIT_USAGE, err, hideCallbackSecret, hideSecret, out, progress } from './output';
import { runMarketplace, runTask } from './read-commands';
import { runSpend } from './spend';
import { runSsh, runSshConfig } from './ssh-commands';
import { runHosts } from './hosts';
import { runTaskCommand } from './task-commands';
import { runVerify } from './verify';

/** Registers every secret the process could know before anything can echo it (even a bad flag). */
const hideKnownSecrets = (argv: readonly string[]): void => {
  hideSecret(process.env.GPU_RELAY_SECRET);
  hideSecret(process.env.WEBHOOK_SECRET);
  hideCallbackSecret(process.env.GPU_RELAY_CALLBACK_SECRET);
  hideCallbackSecret(process.env.CALLBACK_SIGNING_SECRET);
  argv.forEach((arg, i) => {
    if (arg === '--secret') hideSecret(argv[i + 1]);
    else if (arg.startsWith('--secret=')) hideSecret(arg.slice('--secret='.length));
    else if (arg === '--callback-secret') hideCallbackSecret(argv[i + 1]);
    else if (arg.startsWith('--callback-secret=')) hideCallbackSecret(arg.slice('--callback-secret='.length));
  });
};

const showHelp = (command: string, positionals: readonly string[]): number => {
  const topic = command === 'help' ? positionals[0] : command;
  const spec = commandSpec(topic);
  if (topic && spec && topic !== 'help')
    out(`Usage: gpu-relay ${spec.usage}\n\n${spec.summary}\n\n${HELP.slice(HELP.indexOf('Connection:'))}`);
  else if (topic && !spec) throw new CliError(`unknown command '${topic}'`);
  else out(HELP);
  return EXIT_OK;
};

export const main = async (argv: string[]): Promise<number> => {
  hideKnownSecrets(argv);
  const { command, values, positionals } = parseCommandLine(argv);
  if (command === 'help' || values.help) return showHelp(command, positionals);
  switch (command) {
    case 'marketplace':
      return runMarketplace(values, positionals);
    case 'task':
      return runTask(values, positionals);
    case 'verify':
      return runVerify(values, positionals);
    case 'keys':
      return runKeys(values, positionals);
    case 'spend':
      return runSpend(values, positionals);
    case 'hosts':
      return runHosts(values, positionals);
    case 'env':
      return runEnv(values, positionals);
    case 'ssh':
      return runSsh(values, positionals, argv);
    case 'ssh-config':
      return runSshConfig(values, positionals);
    default:
      return runTaskCommand(command, values, positionals);
  }
};

/** The longest exit waits for file writes in progress (below). */
const FILE_WRITES_WAIT_MS = 1_000;

/**
 * Resolves once no promise-based file write is in progress, or after FILE_WRITES_WAIT_MS. tsx (which
 * bin/gpu-relay.mjs loads this client through) writes its compile cache with fs.promises while the
 * modules load: a process.exit right after a quick command (help, a usage error, a short request)
 * cut those writes short and left empty cache files, so every run compiled the client again.
 */
const fileWritesDone = async (): Promise<void> => {
  const until = Date.now() + FILE_WRITES_WAIT_MS;
  while (Date.now() < until && process.getActiveResourcesInfo().includes('FSReqPromise'))
    await new Promise((resolve) => setImmediate(resolve));
};

const exit = (code: number): void => {
  // Let piped stdout/stderr drain, and file writes finish, before exiting.
  process.stdout.write('', () => process.stderr.write('', () => void fileWritesDone().then(() => process.exit(code))));
};

process.on('SIGINT', () => {
  progress.done();
  err('interrupted');
  exit(130);
});

main(process.argv.slice(2)).then(exit, (error: unknown) => {
  progress.done();
  if (error instanceof CliError) {
    err(`gpu-relay: ${error.message}`);
    exit(error.exitCode);
  } else {
    err(`gpu-relay: unexpected error: ${(error as Error)?.message ?? error}`);
    exit(EXIT_USAGE);
  }
});
