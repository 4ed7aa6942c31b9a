/**
 * create-order's access flags (issue 37 §1, §5): --ssh-key FILE.pub (or the default key, or
 * --no-ssh-key), --port PORT:PROTO, --command-file FILE, --jupyter-token TOKEN and --password-prompt,
 * turned into the request's `ssh_public_key`, `ports`, `command`, `jupyter_token` and `ssh_password`,
 * each checked as the relay checks it before anything is sent.
 */
import { readFileSync, statSync } from 'node:fs';
import type { Values } from './args';
import { usageError } from './commands';
import { err, hideSecret } from './output';
import { readSecretLine } from './password-prompt';
import type { RequestBody } from './request-body';
import { defaultPublicKeyFile, expandHome, readPublicKeyFile, tildePath } from './ssh-key-file';

/** The relay's limits (issue 37 §1). */
export const MAX_PORTS = 16;
export const MAX_COMMAND_BYTES = 16 * 1024;
const PASSWORD = /^[A-Za-z0-9]{12,32}$/;
const JUPYTER_TOKEN = /^[A-Za-z0-9]{16,32}$/;

export type PortProtocol = 'tcp' | 'http';

/** `--port 8000:http` (repeatable; comma-separated too) → `{ "8000": "http" }`. */
export const parsePorts = (command: string, raws: readonly string[]): Record<string, PortProtocol> => {
  const ports: Record<string, PortProtocol> = {};
  for (const raw of raws.flatMap((r) => r.split(',')).map((r) => r.trim())) {
    const match = /^(\d{1,5}):(tcp|http)$/i.exec(raw);
    const port = match ? Number(match[1]) : Number.NaN;
    if (!match || !(port >= 1 && port <= 65535))
      throw usageError(command, `--port takes PORT:PROTO, a container port 1-65535 and tcp or http, got '${raw}'`);
    const protocol = match[2].toLowerCase() as PortProtocol;
    const key = String(port);
    if (ports[key] !== undefined && ports[key] !== protocol)
      throw usageError(command, `--port ${key} is given as both ${ports[key]} and ${protocol}`);
    ports[key] = protocol;
  }
  if (Object.keys(ports).length > MAX_PORTS) throw usageError(command, `--port: at most ${MAX_PORTS} ports`);
  return ports;
};

/** --command-file FILE → the start-up script, at most 16 KiB. */
export const readCommandFile = (command: string, file: string): string => {
  const resolved = expandHome(file);
  let size: number;
  try {
    const stat = statSync(resolved);
    if (!stat.isFile()) throw usageError(command, `--command-file: ${file} is not a file`);
    size = stat.size;
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === undefined) throw error;
    throw usageError(command, `--command-file: cannot read ${file} (${(error as NodeJS.ErrnoException).code})`);
  }
  if (size > MAX_COMMAND_BYTES)
    throw usageError(command, `--command-file: ${file} is ${size} bytes; the relay takes at most ${MAX_COMMAND_BYTES}`);
  const script = readFileSync(resolved, 'utf8');
  if (script.trim() === '') throw usageError(command, `--command-file: ${file} is empty`);
  return script;
};

/** The key create-order sends: --ssh-key's, none with --no-ssh-key, else the default key (said on stderr). */
const publicKeyOf = (command: string, values: Values): string | undefined => {
  if (values['no-ssh-key']) {
    if (values['ssh-key'] !== undefined) throw usageError(command, '--ssh-key and --no-ssh-key contradict each other');
    return undefined;
  }
  if (values['ssh-key'] !== undefined) return readPublicKeyFile(command, '--ssh-key', values['ssh-key']);
  const offered = defaultPublicKeyFile();
  if (offered === undefined) return undefined;
  const line = readPublicKeyFile(command, 'the default key (--no-ssh-key to send none)', offered);
  err(`using SSH key ${tildePath(offered)} (--ssh-key FILE.pub to choose another, --no-ssh-key for none)`);
  return line;
};

/** Adds the access fields of create-order's flags to `body` (all but the prompted password). */
export const addAccessFields = (command: string, values: Values, body: RequestBody): void => {
  const key = publicKeyOf(command, values);
  if (key !== undefined) body.ssh_public_key = key;
  if (values.port !== undefined && values.port.length > 0) body.ports = parsePorts(command, values.port);
  if (values['command-file'] !== undefined) body.command = readCommandFile(command, values['command-file']);
  const token = values['jupyter-token'];
  if (token !== undefined) {
    // The value is not echoed: it is a secret, even one typed on the command line.
    if (!JUPYTER_TOKEN.test(token)) throw usageError(command, '--jupyter-token takes 16 to 32 letters and digits');
    body.jupyter_token = token;
  }
};

/**
 * --password-prompt: the password from the terminal without echo (asked twice), or the first line of
 * stdin when it is not a terminal; checked (letters and digits, 12-32) and hidden from all output.
 */
export const addPromptedPassword = async (command: string, values: Values, body: RequestBody): Promise<void> => {
  if (!values['password-prompt']) return;
  const tty = Boolean(process.stdin.isTTY);
  const password = await readSecretLine('SSH password for root on the server (letters and digits, 12-32): ');
  if (password === undefined || password === '') throw usageError(command, '--password-prompt: no password given');
  hideSecret(password);
  if (!PASSWORD.test(password))
    throw usageError(command, '--password-prompt: the password must be 12 to 32 letters and digits');
  if (tty && (await readSecretLine('Again: ')) !== password)
    throw usageError(command, '--password-prompt: the two passwords differ');
  body.ssh_password = password;
};
