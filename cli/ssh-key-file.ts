/**
 * The SSH public key a command sends (create-order's and keys create's `--ssh-key FILE.pub`, `keys
 * ssh-key NAME FILE.pub`): read from its file, one OpenSSH line, checked as the relay checks it. A file
 * that holds a private key is refused before anything is sent, and its content is never printed.
 */
import { existsSync, readFileSync, statSync } from 'node:fs';
import { homedir } from 'node:os';
import * as path from 'node:path';
import { MAX_SSH_PUBLIC_KEY_LENGTH, SSH_PUBLIC_KEY_TYPES } from '../contract/ssh-keys';
import { usageError } from './commands';

/** The relay's limit on `ssh_public_key` (issue 37 §1). */
export const SSH_PUBLIC_KEY_MAX_CHARS = MAX_SSH_PUBLIC_KEY_LENGTH;

/** Key types the relay takes (issue 37 §1); ssh-rsa needs at least 2048 bits, which the relay checks. */
const KEY_TYPES: readonly string[] = SSH_PUBLIC_KEY_TYPES;

/** A file larger than this holds no public key; reading it whole is pointless (and it may be a disk image). */
const MAX_FILE_BYTES = 64 * 1024;

/** True when `text` is (or holds) a private key: PEM/OpenSSH `-----BEGIN … PRIVATE KEY-----`, or PuTTY's .ppk. */
export const looksLikePrivateKey = (text: string): boolean =>
  /-----BEGIN [A-Z0-9 ]*PRIVATE KEY-----/.test(text) || /^\s*PuTTY-User-Key-File-/m.test(text);

/** `~/x` as the path it names (a flag value the shell did not expand, e.g. `--ssh-key=~/.ssh/id.pub`). */
export const expandHome = (file: string): string =>
  file === '~' || file.startsWith('~/') ? path.join(homedir(), file.slice(1)) : file;

/** The .pub file to name when `file` holds a private key. */
const publicHalfOf = (file: string): string => (file.endsWith('.pub') ? 'the .pub file' : `${file}.pub`);

/**
 * The one key line of an OpenSSH public key file, checked; `flag` names where the file came from in
 * messages (`--ssh-key`, `FILE.pub`). Never echoes what the file holds.
 */
export const readPublicKeyFile = (command: string, flag: string, file: string): string => {
  const resolved = expandHome(file);
  let size: number;
  try {
    const stat = statSync(resolved);
    if (!stat.isFile()) throw usageError(command, `${flag}: ${file} is not a file`);
    size = stat.size;
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === undefined) throw error;
    throw usageError(command, `${flag}: cannot read ${file} (${(error as NodeJS.ErrnoException).code})`);
  }
  if (size > MAX_FILE_BYTES) throw usageError(command, `${flag}: ${file} is too large for a public key file`);
  const text = readFileSync(resolved, 'utf8');
  if (looksLikePrivateKey(text))
    throw usageError(
      command,
      `${flag}: ${file} is a private key: send the line of its public half, ${publicHalfOf(file)} (the private key never leaves this machine)`,
    );
  const lines = text
    .split(/\r?\n/)
    .map((line) => line.trim())
    .filter((line) => line !== '' && !line.startsWith('#'));
  if (lines.length !== 1)
    throw usageError(
      command,
      `${flag}: ${file} must hold exactly one OpenSSH public key line, it holds ${lines.length} lines`,
    );
  const [line] = lines;
  const [type, blob] = line.split(/\s+/);
  if (!KEY_TYPES.includes(type) || !blob || !/^[A-Za-z0-9+/]+={0,3}$/.test(blob))
    throw usageError(
      command,
      `${flag}: ${file} is not an OpenSSH public key line (${KEY_TYPES.join(', ')}; e.g. the .pub file ssh-keygen writes)`,
    );
  if (line.length > SSH_PUBLIC_KEY_MAX_CHARS)
    throw usageError(command, `${flag}: the key line of ${file} is longer than ${SSH_PUBLIC_KEY_MAX_CHARS} characters`);
  return line;
};

/** The public key create-order offers without --ssh-key: ~/.ssh/id_ed25519.pub, else ~/.ssh/id_rsa.pub. */
export const defaultPublicKeyFile = (): string | undefined =>
  ['id_ed25519.pub', 'id_rsa.pub'].map((name) => path.join(homedir(), '.ssh', name)).find((file) => existsSync(file));

/** A path under the home folder as `~/…` (for messages). */
export const tildePath = (file: string): string => {
  const home = homedir();
  return home && file.startsWith(home + path.sep) ? `~${file.slice(home.length)}` : file;
};
