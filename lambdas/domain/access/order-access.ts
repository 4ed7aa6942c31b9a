/**
 * How a renter gets into an order (issue 37): the SSH public key, the root password, the Jupyter
 * token, the ports and the start-up command a create-order may carry, the rules each value meets,
 * and the `access` block a ready order's result reports. Pure: no clock, no randomness, no I/O
 * (a generated token comes from the caller of these rules).
 *
 * The production marketplace takes them in create_order as `ssh_key` (one OpenSSH public key line,
 * installed for root), `ssh_password` (root's password), `jupyter_token`, `command` and
 * `autossh_entrypoint: true` for key logins, and returns none of them in my_orders
 * (marketplace-live.md "Fourth round", S13, S14): the relay keeps what it sent, sealed.
 */
import { createHash } from 'node:crypto';
import type { PortProtocol } from '../marketplace-types';
import {
  MAX_SSH_PUBLIC_KEY_LENGTH,
  SSH_PUBLIC_KEY_TYPES as KEY_TYPES,
  SSH_RSA_MIN_BITS as MIN_RSA_BITS,
  type SshPublicKeyType as SshKeyType,
} from '../../../contract/ssh-keys';

export { MAX_SSH_PUBLIC_KEY_LENGTH, MIN_RSA_BITS };
/** Longest start-up script (16 KiB, in UTF-8 bytes). */
export const MAX_COMMAND_BYTES = 16 * 1024;
/** Most ports one order maps. */
export const MAX_PORTS = 16;
/** The ssh port: mapped whenever the order carries an SSH credential (a key or a password). */
export const SSH_PORT = '22';
/** The length of a Jupyter token the relay generates. */
export const GENERATED_TOKEN_LENGTH = 32;
/** The alphabet of generated tokens and passwords: the marketplace takes letters and digits only. */
export const TOKEN_ALPHABET = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789';

export const SSH_PASSWORD_PATTERN = /^[A-Za-z0-9]{12,32}$/;
export const JUPYTER_TOKEN_PATTERN = /^[A-Za-z0-9]{16,32}$/;

export const PRIVATE_KEY_ERROR = 'ssh_public_key is a private key: send the line of the .pub file';
export const SSH_PASSWORD_ERROR = 'ssh_password must be 12 to 32 letters and digits';
export const JUPYTER_TOKEN_ERROR = 'jupyter_token must be 16 to 32 letters and digits';
export const COMMAND_ERROR = `command must be a string of at most ${MAX_COMMAND_BYTES} bytes`;
export const PORTS_ERROR = `ports must map at most ${MAX_PORTS} container ports (1-65535) to "tcp" or "http"`;

export type { SshKeyType };

export const SSH_PUBLIC_KEY_ERROR =
  `ssh_public_key must be one OpenSSH public key line (${KEY_TYPES.join(', ')}; ssh-rsa of at least ${MIN_RSA_BITS} bits), ` +
  `at most ${MAX_SSH_PUBLIC_KEY_LENGTH} characters`;

/** A private key pasted where the public line belongs: PEM/OpenSSH private keys and PuTTY key files. */
export const looksLikePrivateKey = (text: string): boolean =>
  /-----BEGIN [A-Z0-9 ]*PRIVATE KEY-----/.test(text) || text.includes('PuTTY-User-Key-File');

/** A parsed public key line. */
export interface SshPublicKey {
  readonly type: SshKeyType;
  /** The key blob, base64 as in the line. */
  readonly blob: string;
  /** `<type> <blob>` (the comment dropped): what the marketplace gets and the simulator compares. */
  readonly line: string;
  /** `SHA256:<base64, no padding>` of the blob, as `ssh-keygen -l` prints it. */
  readonly fingerprint: string;
}

/** Reads the SSH wire strings of a key blob: length-prefixed fields. */
const wireStrings = (blob: Buffer): Buffer[] | undefined => {
  const out: Buffer[] = [];
  let at = 0;
  while (at < blob.length) {
    if (at + 4 > blob.length) return undefined;
    const length = blob.readUInt32BE(at);
    at += 4;
    if (at + length > blob.length) return undefined;
    out.push(blob.subarray(at, at + length));
    at += length;
  }
  return out;
};

/** Bits of an SSH mpint (big-endian, maybe with a leading zero byte). */
const mpintBits = (value: Buffer): number => {
  let i = 0;
  while (i < value.length && value[i] === 0) i += 1;
  if (i === value.length) return 0;
  return (value.length - i - 1) * 8 + (32 - Math.clz32(value[i]!));
};

const CURVES: Readonly<Record<string, string>> = {
  'ecdsa-sha2-nistp256': 'nistp256',
  'ecdsa-sha2-nistp384': 'nistp384',
  'ecdsa-sha2-nistp521': 'nistp521',
};

/** Whether the blob's fields are what its type says (the type inside the blob, the key size). */
const blobFits = (type: SshKeyType, fields: readonly Buffer[]): boolean => {
  if (fields[0]?.toString('latin1') !== type) return false;
  switch (type) {
    case 'ssh-ed25519':
      return fields.length === 2 && fields[1]!.length === 32;
    case 'sk-ssh-ed25519@openssh.com':
      return fields.length === 3 && fields[1]!.length === 32 && fields[2]!.length > 0;
    case 'ssh-rsa':
      return fields.length === 3 && mpintBits(fields[2]!) >= MIN_RSA_BITS;
    default:
      return fields.length === 3 && fields[1]!.toString('latin1') === CURVES[type] && fields[2]!.length > 0;
  }
};

/**
 * One OpenSSH public key line (`<type> <base64> [comment]`, surrounding whitespace ignored), or
 * the text of the rule it breaks. A private key gets {@link PRIVATE_KEY_ERROR}; no error text ever
 * holds the value itself.
 */
export const parseSshPublicKey = (
  value: unknown,
): { readonly ok: true; readonly value: SshPublicKey } | { readonly ok: false; readonly error: string } => {
  if (typeof value !== 'string') return { ok: false, error: SSH_PUBLIC_KEY_ERROR };
  if (looksLikePrivateKey(value)) return { ok: false, error: PRIVATE_KEY_ERROR };
  const text = value.trim();
  if (text.length === 0 || text.length > MAX_SSH_PUBLIC_KEY_LENGTH || /[\r\n\0]/.test(text))
    return { ok: false, error: SSH_PUBLIC_KEY_ERROR };
  const [type, blob] = text.split(/[ \t]+/);
  if (!(KEY_TYPES as readonly string[]).includes(type ?? '') || !blob || !/^[A-Za-z0-9+/]+={0,2}$/.test(blob))
    return { ok: false, error: SSH_PUBLIC_KEY_ERROR };
  const bytes = Buffer.from(blob, 'base64');
  const fields = wireStrings(bytes);
  if (!fields || !blobFits(type as SshKeyType, fields)) return { ok: false, error: SSH_PUBLIC_KEY_ERROR };
  return {
    ok: true,
    value: {
      type: type as SshKeyType,
      blob,
      line: `${type} ${blob}`,
      fingerprint: sshKeyFingerprint(bytes),
    },
  };
};

/** `SHA256:<base64 without padding>` of a raw key blob, as OpenSSH prints it. */
export const sshKeyFingerprint = (blob: Buffer): string =>
  `SHA256:${createHash('sha256').update(blob).digest('base64').replace(/=+$/, '')}`;

/** The byte length of a start-up script as the marketplace receives it (UTF-8). */
export const commandBytes = (command: string): number => Buffer.byteLength(command, 'utf8');

/** Whether a port map is one the marketplace takes: at most MAX_PORTS ports 1–65535 → tcp | http. */
export const portsProblem = (ports: Readonly<Record<string, unknown>>): string | undefined => {
  const entries = Object.entries(ports);
  if (entries.length > MAX_PORTS) return PORTS_ERROR;
  for (const [port, protocol] of entries) {
    const n = Number(port);
    if (!/^\d{1,5}$/.test(port) || n < 1 || n > 65_535 || String(n) !== port) return PORTS_ERROR;
    if (protocol !== 'tcp' && protocol !== 'http') return PORTS_ERROR;
  }
  return undefined;
};

/** Whether a port map exposes any http port (then a Jupyter token is always set). */
export const mapsHttp = (ports: Readonly<Record<string, PortProtocol>>): boolean =>
  Object.values(ports).includes('http');

/**
 * The ports an order maps: the request's, else DEFAULT_PORTS; with an SSH credential, 22 (tcp) is
 * added when missing, so the key or password can be used.
 */
export const orderPorts = (
  requested: Readonly<Record<string, PortProtocol>> | undefined,
  defaults: Readonly<Record<string, PortProtocol>>,
  hasSshCredential: boolean,
): Readonly<Record<string, PortProtocol>> => {
  const ports = requested ?? defaults;
  return hasSshCredential && ports[SSH_PORT] === undefined ? { ...ports, [SSH_PORT]: 'tcp' } : ports;
};

/** A token of {@link GENERATED_TOKEN_LENGTH} letters and digits from random bytes (at least as many). */
export const tokenFromBytes = (bytes: Uint8Array, length: number = GENERATED_TOKEN_LENGTH): string => {
  if (bytes.length < length) throw new Error(`a token of ${length} needs ${length} random bytes`);
  // 62 symbols: rejection-free modulo has a bias of < 0.5 % per symbol at 256/62; ~190 bits stay.
  return Array.from(bytes.subarray(0, length), (byte) => TOKEN_ALPHABET[byte % TOKEN_ALPHABET.length]).join('');
};

/**
 * What a task keeps sealed beside its record (never in the workflow input, the record as read, a
 * log or a chat text): the caller's root password, the Jupyter token (given or generated) and the
 * start-up script (scripts often carry tokens). Empty fields are absent.
 */
export interface OrderAccessSecrets {
  readonly ssh_password?: string;
  readonly jupyter_token?: string;
  readonly command?: string;
}

/** The `access` block of a ready order's result (issue 37 §4). */
export interface OrderAccess {
  readonly ssh?: {
    readonly host: string;
    readonly port: number;
    readonly user: string;
    readonly command: string;
    /** The full host key seen at the readiness login (`ssh-ed25519 AAAA…`), to pin. */
    readonly host_key?: string;
    /** The known_hosts line for that key (`[host]:port key`, or `host key` on port 22). */
    readonly known_hosts?: string;
  };
  /** Container port → public URL of each http port the order maps. */
  readonly http?: Readonly<Record<string, string>>;
  /**
   * The notebook: the URL of container port 8888 when the order maps it, and (in the signed result
   * and to the task's own key only) the token the marketplace set for the order's http ports.
   */
  readonly jupyter?: { readonly url?: string; readonly token?: string };
}

/** The user the relay and callers log in as: the marketplace installs the key and password for root. */
export const ACCESS_USER = 'root';

/** The known_hosts host field: bare on port 22, `[host]:port` otherwise (OpenSSH's rule). */
export const knownHostsHost = (host: string, port: number): string => (port === 22 ? host : `[${host}]:${port}`);

/** The ssh command line a caller runs. */
export const sshCommand = (host: string, port: number, user: string = ACCESS_USER): string =>
  port === 22 ? `ssh ${user}@${host}` : `ssh -p ${port} ${user}@${host}`;

/** The container port Jupyter listens on in the common images (and the spec's default ports). */
export const JUPYTER_PORT = '8888';

/**
 * The access block from what the readiness check saw: the ssh endpoint, the host key of the login and
 * the order's http mappings (`http://` or `https://` URLs by container port; 8888's is Jupyter's).
 * `token` is added by the caller where it may be shown (the signed result, the task's own key).
 */
export const orderAccess = (seen: {
  readonly ssh?: { readonly host: string; readonly port: number };
  readonly hostKey?: string;
  readonly http?: Readonly<Record<string, string>>;
}): OrderAccess | undefined => {
  const ssh = seen.ssh
    ? {
        host: seen.ssh.host,
        port: seen.ssh.port,
        user: ACCESS_USER,
        command: sshCommand(seen.ssh.host, seen.ssh.port),
        ...(seen.hostKey !== undefined
          ? {
              host_key: seen.hostKey,
              known_hosts: `${knownHostsHost(seen.ssh.host, seen.ssh.port)} ${seen.hostKey}`,
            }
          : {}),
      }
    : undefined;
  const http = seen.http && Object.keys(seen.http).length > 0 ? seen.http : undefined;
  // Any http port carries the order's token (the relay draws one); the URL is 8888's when mapped.
  const jupyterUrl = http?.[JUPYTER_PORT];
  if (!ssh && !http) return undefined;
  return {
    ...(ssh ? { ssh } : {}),
    ...(http ? { http, jupyter: jupyterUrl !== undefined ? { url: jupyterUrl } : {} } : {}),
  };
};

/** The access block with the Jupyter token added (where it may be shown). */
export const withJupyterToken = (
  access: OrderAccess | undefined,
  token: string | undefined,
): OrderAccess | undefined =>
  access?.jupyter && token !== undefined ? { ...access, jupyter: { ...access.jupyter, token } } : access;

/**
 * The SSH public key stored for each caller key (issue 37 §2): one item per key (`KEYSSH#<name>`),
 * not in the `KEYS#all` item (200 keys × 3 KB would pass DynamoDB's 400 KB item limit). An order by
 * that key without `ssh_public_key` carries it.
 */
export interface KeySshKeys {
  get(keyName: string): Promise<string | undefined>;
  /** The lines of several keys at once (GET /admin/keys shows their fingerprints); keys without one are absent. */
  getMany?(keyNames: readonly string[]): Promise<ReadonlyMap<string, string>>;
  /** Stores (or replaces) the key's line; `now` in Unix seconds. */
  put(keyName: string, line: string, now: number): Promise<void>;
  remove(keyName: string): Promise<void>;
}
