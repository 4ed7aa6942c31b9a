/**
 * The ssh readiness probe (READINESS_PROBE=ssh): one TCP connection to an order's ssh endpoint
 * (node:net), which must send `SSH-` as its first bytes (the identification string of RFC 4253
 * §4.2) within the timeout; then the socket is destroyed. Nothing is sent. Unless `allowPrivate`
 * (ALLOW_PRIVATE_SSH_PROBE, so `npm start` may probe the simulator on loopback), the SSRF guard of
 * the callbacks applies: private, loopback, link-local and reserved addresses are refused, IP
 * literals before connecting and names after DNS. The connection, its timeout and settling once
 * (runProbe) serve the login probe too (./ssh-login-probe.ts).
 */
import { connect, type Socket } from 'node:net';
import type { SshEndpoint } from '../domain/leases/ssh-endpoint';
import type { RelayEnv } from './env';
import type { SshProbe, SshProbeFailure, SshProbeResult } from '../domain/ports';
import { connectLookup, isBlockedDestination, refusedLiteralHost, type Resolver } from './ssrf-guard';

/** The whole probe (DNS, connect, banner) of one poll; the poll interval is 5 s and CheckOrder's budget counts it. */
export const SSH_PROBE_TIMEOUT_MS = 3_000;
const BANNER_PREFIX = Buffer.from('SSH-', 'latin1');
/** RFC 4253: the identification line is at most 255 characters, CR LF included. */
const MAX_BANNER_BYTES = 255;

export interface SshBannerProbeOptions {
  /** True: loopback and private hosts may be probed (local runtime). False: the SSRF guard applies (deployed). */
  readonly allowPrivate: boolean;
  /** @default SSH_PROBE_TIMEOUT_MS */
  readonly timeoutMs?: number;
  /** DNS stand-in for tests. @default node:dns lookup */
  readonly resolver?: Resolver;
}

/** A probe's failure, with its detail when there is one. */
export const failed = (reason: SshProbeFailure, detail?: string): SshProbeResult => ({
  answered: false,
  reason,
  ...(detail ? { detail } : {}),
});

/** A socket error as a probe failure; the error's code is the detail (never a message with data in it). */
const failureOf = (error: NodeJS.ErrnoException): SshProbeResult => {
  if (isBlockedDestination(error)) return failed('address_refused');
  const code = error.code ?? 'error';
  if (code === 'ECONNREFUSED') return failed('refused', code);
  if (code === 'ECONNRESET' || code === 'EPIPE' || code === 'ECONNABORTED') return failed('reset', code);
  if (code === 'ETIMEDOUT') return failed('timeout', code);
  return failed('unreachable', code);
};

/** The banner line as printable ASCII, for logs. */
const bannerText = (bytes: Buffer): string => {
  const end = bytes.indexOf(0x0a);
  return bytes
    .subarray(0, end < 0 ? bytes.length : end)
    .toString('latin1')
    .replace(/[^\x20-\x7e]/g, '')
    .slice(0, MAX_BANNER_BYTES);
};

/** What a probe does on its connection; runProbe owns the connection, the timer and settling once. */
export interface ProbeSteps {
  /** The result when the timeout passes first. */
  readonly timedOut: () => SshProbeResult;
  /** A socket error as the result. */
  readonly failureOf: (error: NodeJS.ErrnoException) => SshProbeResult;
  /** Starts the probe on the socket (still connecting); it ends by `finish`. */
  readonly start: (socket: Socket, finish: (result: SshProbeResult) => void) => void;
  /** What to let go at the end, before the socket is destroyed. */
  readonly release?: () => void;
}

/**
 * One probe of `endpoint` (banner or login): the guarded connection, `steps` on it, and the first
 * result of `finish`, the timeout or a socket error; then the timer is cleared and the socket
 * destroyed. An IP literal the guard refuses is answered at once, without connecting. Resolves, never
 * rejects.
 */
export const runProbe = (
  endpoint: SshEndpoint,
  options: SshBannerProbeOptions,
  steps: (timeoutMs: number) => ProbeSteps,
): Promise<SshProbeResult> => {
  const host = endpoint.host.replace(/^\[|\]$/g, '');
  if (!options.allowPrivate && refusedLiteralHost(host)) return Promise.resolve(failed('address_refused'));
  const timeoutMs = options.timeoutMs ?? SSH_PROBE_TIMEOUT_MS;
  const lookup = connectLookup(options.allowPrivate, options.resolver);
  const probe = steps(timeoutMs);
  return new Promise<SshProbeResult>((resolve) => {
    let settled = false;
    const socket = connect({ host, port: endpoint.port, ...(lookup ? { lookup } : {}) });
    const finish = (result: SshProbeResult): void => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      probe.release?.();
      socket.destroy();
      resolve(result);
    };
    const timer = setTimeout(() => finish(probe.timedOut()), timeoutMs);
    socket.on('error', (error: NodeJS.ErrnoException) => finish(probe.failureOf(error)));
    probe.start(socket, finish);
  });
};

/** Probes one endpoint; resolves (never rejects) with the banner or why there was none. */
export const probeSshBanner = (endpoint: SshEndpoint, options: SshBannerProbeOptions): Promise<SshProbeResult> =>
  runProbe(endpoint, options, (timeoutMs) => {
    let received = Buffer.alloc(0);
    const prefixSeen = () => received.length >= BANNER_PREFIX.length;
    return {
      // A server that sent `SSH-` and stalls before the end of its line is still an ssh server.
      timedOut: () =>
        prefixSeen()
          ? { answered: true, banner: bannerText(received) }
          : failed('timeout', `no banner within ${timeoutMs} ms`),
      failureOf,
      start: (socket, finish) => {
        socket.on('data', (chunk: Buffer) => {
          received = Buffer.concat([received, chunk]).subarray(0, MAX_BANNER_BYTES);
          const head = received.subarray(0, BANNER_PREFIX.length);
          if (!BANNER_PREFIX.subarray(0, head.length).equals(head)) return finish(failed('not_ssh'));
          if (prefixSeen() && (received.includes(0x0a) || received.length >= MAX_BANNER_BYTES))
            finish({ answered: true, banner: bannerText(received) });
        });
        socket.on('close', () =>
          finish(
            prefixSeen() ? { answered: true, banner: bannerText(received) } : failed('reset', 'closed before a banner'),
          ),
        );
      },
    };
  });

/** The SshProbe port over node:net. */
export const sshBannerProbe = (options: SshBannerProbeOptions): SshProbe => ({
  probe: (endpoint) => probeSshBanner(endpoint, options),
});

/**
 * The readiness probe of READINESS_PROBE (`ssh`: the banner probe, `none`: none), under its own
 * address policy ALLOW_PRIVATE_SSH_PROBE (issue 29 §7), never the callbacks' ALLOW_PRIVATE_CALLBACKS.
 */
export const sshProbeFromEnv = (
  env: Pick<RelayEnv, 'READINESS_PROBE' | 'ALLOW_PRIVATE_SSH_PROBE'>,
): SshProbe | undefined =>
  env.READINESS_PROBE === 'ssh' ? sshBannerProbe({ allowPrivate: env.ALLOW_PRIVATE_SSH_PROBE }) : undefined;
