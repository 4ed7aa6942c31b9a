/**
 * The ssh login probe (READINESS_PROBE=ssh-login, issue 31 §4): an SSH login (ssh2's client) with the
 * order's password, within the probe's timeout; the session is closed at once, nothing is run. A
 * banner without a working login is not ready: "Permission denied" is `login_refused`, polled again
 * by the next readiness poll. The host key seen at the login is reported (`SHA256:<base64>`, as
 * OpenSSH prints it) so callers can pin it. The same SSRF guard as the banner probe: unless
 * `allowPrivate`, private, loopback, link-local and reserved addresses are refused, IP literals before
 * connecting and names after DNS (the socket is opened here, through the guarded lookup, and handed
 * to ssh2).
 */
import { createHash } from 'node:crypto';
import type * as Ssh2 from 'ssh2';
import type { SshEndpoint } from '../domain/leases/ssh-endpoint';
import type { SshLoginProbe, SshProbeResult } from '../domain/ports';
import { failed, runProbe, type SshBannerProbeOptions } from './ssh-banner-probe';
import { isBlockedDestination } from './ssrf-guard';

/** The user the relay logs in as: the marketplace's containers take the order's password for root. */
export const SSH_LOGIN_USER = 'root';

/** The banner probe's options (address policy, timeout, resolver) and the password. */
export interface SshLoginProbeOptions extends SshBannerProbeOptions {
  /** The order's ssh_password for an endpoint's order. */
  readonly password: string;
}

/** A failure's kind from a socket or ssh2 error; the code is the detail (never a message with data in it). */
const failureOf = (error: NodeJS.ErrnoException & { level?: string }): SshProbeResult => {
  if (isBlockedDestination(error)) return failed('address_refused');
  if (error.level === 'client-authentication') return failed('login_refused', 'authentication failed');
  const code = error.code ?? error.level ?? 'error';
  if (code === 'ECONNREFUSED') return failed('refused', code);
  if (code === 'ECONNRESET' || code === 'EPIPE' || code === 'ECONNABORTED') return failed('reset', code);
  if (code === 'ETIMEDOUT' || error.level === 'client-timeout') return failed('timeout', String(code));
  if (error.level === 'protocol') return failed('not_ssh', 'protocol');
  return failed('unreachable', String(code));
};

/** A raw host key blob as a known_hosts key (`<type> <base64>`): its type is the blob's first SSH string. */
export const hostKeyLine = (key: Buffer): string | undefined => {
  if (key.length < 4) return undefined;
  const length = key.readUInt32BE(0);
  if (length === 0 || length > 64 || 4 + length > key.length) return undefined;
  const type = key.subarray(4, 4 + length).toString('latin1');
  return /^[a-z0-9@.-]+$/.test(type) ? `${type} ${key.toString('base64')}` : undefined;
};

/** `SHA256:<base64 without padding>` of a raw host key, as `ssh-keygen -l` prints it. */
export const hostKeySha256 = (key: Buffer): string =>
  `SHA256:${createHash('sha256').update(key).digest('base64').replace(/=+$/, '')}`;

let ssh2: Promise<typeof Ssh2> | undefined;

/**
 * ssh2, evaluated at the first login probe instead of when the bundle loads: its modules take ~19 ms
 * of CPU to evaluate (BENCHMARKS.md §13), which every CheckOrder cold start paid, also with the
 * default banner probe that never logs in. Its code is a chunk of its own beside the bundle
 * (relayBundleOptions), read only then.
 */
const loadSsh2 = (): Promise<typeof Ssh2> =>
  // ssh2 is CommonJS: a bundle's chunk exports its module.exports as `default` only.
  (ssh2 ??= import('ssh2').then((m) => (m as { default?: typeof Ssh2 }).default ?? m));

/** Logs in once; resolves (never rejects) with the host key or why there was no login. */
export const probeSshLogin = async (endpoint: SshEndpoint, options: SshLoginProbeOptions): Promise<SshProbeResult> => {
  const { Client } = await loadSsh2();
  return runProbe(endpoint, options, (timeoutMs) => {
    let hostKey: string | undefined;
    let hostKeyText: string | undefined;
    let banner = '';
    const client = new Client();
    return {
      timedOut: () => failed('timeout', `no login within ${timeoutMs} ms`),
      failureOf,
      release: () => client.end(),
      start: (socket, finish) => {
        socket.once('connect', () => {
          client.on('ready', () =>
            finish({
              answered: true,
              banner,
              ...(hostKey !== undefined ? { host_key_sha256: hostKey } : {}),
              ...(hostKeyText !== undefined ? { host_key: hostKeyText } : {}),
            }),
          );
          client.on('handshake', () => undefined);
          client.on('error', (error) => finish(failureOf(error as NodeJS.ErrnoException & { level?: string })));
          client.on('close', () => finish(failed('reset', 'closed before a login')));
          client.connect({
            sock: socket,
            username: SSH_LOGIN_USER,
            password: options.password,
            tryKeyboard: false,
            readyTimeout: timeoutMs,
            // Records the key; pinning is the caller's (the result reports it).
            hostVerifier: (key: Buffer) => {
              hostKey = hostKeySha256(key);
              hostKeyText = hostKeyLine(key);
              return true;
            },
          });
          (client as unknown as { on(event: 'greeting', fn: (text: string) => void): void }).on('greeting', (text) => {
            banner = text.replace(/[^\x20-\x7e]/g, '').slice(0, 255);
          });
        });
      },
    };
  });
};

/** The SshProbe port over ssh2: `passwordFor` gives the order's password for each probe. */
export const sshLoginProbe = (options: Omit<SshLoginProbeOptions, 'password'>): SshLoginProbe => ({
  login: (endpoint, password) => probeSshLogin(endpoint, { ...options, password }),
});
