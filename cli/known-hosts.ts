/**
 * Host keys pinned in the CLI's own known_hosts file (cli/state-files.ts): one line per host and port,
 * `host key-type base64` for port 22, `[host]:port key-type base64` otherwise (OpenSSH's format). A
 * host whose pinned key differs from the one the relay reports is refused, loudly, and the file is left
 * as it is, unless the caller says to replace it.
 */
import { createHash } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { CliError } from './output';
import { writePrivateFile } from './state-files';

/** How OpenSSH names a host and port in known_hosts. */
export const knownHostsName = (host: string, port: number): string => (port === 22 ? host : `[${host}]:${port}`);

/** A host key as `key-type base64` (a comment dropped). */
export interface HostKey {
  readonly type: string;
  readonly blob: string;
}

/** `ssh-ed25519 AAAA… [comment]` → its type and key; undefined when it is not a key. */
export const parseHostKey = (text: string): HostKey | undefined => {
  const [type, blob] = text.trim().split(/\s+/);
  if (!type || !blob || !/^[a-z0-9@.-]+$/i.test(type) || !/^[A-Za-z0-9+/]+={0,3}$/.test(blob)) return undefined;
  return { type, blob };
};

/** The key's fingerprint as ssh-keygen -l prints it: `SHA256:` and the unpadded base64 of the key's hash. */
export const fingerprintOf = (key: HostKey): string =>
  `SHA256:${createHash('sha256').update(Buffer.from(key.blob, 'base64')).digest('base64').replace(/=+$/, '')}`;

export type PinOutcome = 'added' | 'already pinned' | 'replaced';

/** The host key pinned for another key than the one now reported: the login is refused. */
export class HostKeyChangedError extends CliError {
  constructor(name: string, file: string, pinned: HostKey, reported: HostKey) {
    super(
      [
        `HOST KEY CHANGED for ${name}: ${file} pins ${pinned.type} ${fingerprintOf(pinned)}, the relay now reports ${reported.type} ${fingerprintOf(reported)}.`,
        'Not connecting, and the pinned key is left as it is. Someone may be intercepting the connection;',
        'or a new order runs on the same host and port. If you know which, run again with --replace-host-key.',
      ].join('\n'),
    );
    this.name = 'HostKeyChangedError';
  }
}

/** Whether one known_hosts line is about `name` (its first field: comma-separated host patterns). */
const isAbout = (line: string, name: string): boolean => {
  const trimmed = line.trim();
  if (trimmed === '' || trimmed.startsWith('#')) return false;
  const [hosts] = trimmed.split(/\s+/);
  return hosts.split(',').includes(name);
};

/**
 * Pins `key` for `host`:`port` in `file`: adds the line, keeps it when it is there already, and with
 * `replace` swaps a different key for it; without `replace` a different key throws HostKeyChangedError.
 */
export const pinHostKey = (
  file: string,
  host: string,
  port: number,
  key: HostKey,
  { replace = false }: { replace?: boolean } = {},
): PinOutcome => {
  const name = knownHostsName(host, port);
  let lines: string[] = [];
  try {
    lines = readFileSync(file, 'utf8').split('\n');
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== 'ENOENT') throw error;
  }
  if (lines.at(-1) === '') lines.pop();
  const ours = lines.filter((line) => isAbout(line, name));
  const pinned = ours.map((line) => parseHostKey(line.trim().split(/\s+/).slice(1).join(' ')));
  if (ours.length > 0 && pinned.every((k) => k?.type === key.type && k.blob === key.blob)) return 'already pinned';
  if (ours.length > 0 && !replace) {
    const other = pinned.find((k) => k && (k.type !== key.type || k.blob !== key.blob));
    throw new HostKeyChangedError(name, file, other ?? { type: 'unreadable', blob: '' }, key);
  }
  const kept = lines.filter((line) => !isAbout(line, name));
  writePrivateFile(file, [...kept, `${name} ${key.type} ${key.blob}`].join('\n') + '\n');
  return ours.length > 0 ? 'replaced' : 'added';
};
