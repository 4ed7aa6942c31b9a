/**
 * Where an order's ssh answers, read from its ssh command line (`ssh_connection`: the spec's
 * `connection.ssh`, or the reader's `ssh root@<host> -p <port>` for production orders). Pure.
 */
import { isIPv6 } from 'node:net';

/** A host (name or IP literal, without brackets) and a TCP port. */
export interface SshEndpoint {
  readonly host: string;
  readonly port: number;
}

/** The ssh port when the command line names none. */
export const DEFAULT_SSH_PORT = 22;

/** ssh(1) options that take an argument, so the token after them is not the destination. */
const OPTIONS_WITH_ARGUMENT = new Set('BbcDEeFIiJLlmOoPpQRSWw'.split(''));
/** A DNS name or an IPv4 / IPv6 literal; anything else (spaces, slashes, shell syntax) is refused. */
const HOST_PATTERN = /^[A-Za-z0-9._:-]{1,253}$/;

const portOf = (text: string | undefined): number | undefined => {
  if (text === undefined || !/^\d{1,5}$/.test(text)) return undefined;
  const port = Number(text);
  return port >= 1 && port <= 65_535 ? port : undefined;
};

/** `user@host`, `host`, `[v6]`, `[v6]:port` or an `ssh://user@host:port` URI → host and optional port. */
const destinationOf = (token: string): { host: string; port?: number } | undefined => {
  if (token.startsWith('ssh://')) {
    let url: URL;
    try {
      url = new URL(token);
    } catch {
      return undefined;
    }
    const host = url.hostname.replace(/^\[|\]$/g, '');
    if (url.port !== '' && portOf(url.port) === undefined) return undefined;
    return host === '' ? undefined : { host, ...(url.port !== '' ? { port: Number(url.port) } : {}) };
  }
  const hostPart = token.slice(token.lastIndexOf('@') + 1);
  const bracketed = /^\[([^\]]+)\](?::(\d+))?$/.exec(hostPart);
  if (bracketed) {
    const port = bracketed[2] === undefined ? undefined : portOf(bracketed[2]);
    if (bracketed[2] !== undefined && port === undefined) return undefined;
    return { host: bracketed[1] as string, ...(port !== undefined ? { port } : {}) };
  }
  return hostPart === '' ? undefined : { host: hostPart };
};

const validHost = (host: string): boolean => HOST_PATTERN.test(host) && (!host.includes(':') || isIPv6(host));

/**
 * The endpoint an ssh command line connects to, or undefined when it names none that can be trusted.
 * Reads `ssh root@h -p 1277`, `ssh -p 1277 root@h`, `ssh -p1277 root@h`, `ssh -o Port=1277 root@h`,
 * `ssh -l root h`, `ssh root@[2001:db8::1] -p 22` and `ssh://root@h:1277`, with any extra options;
 * without a port it is 22. An explicit port that is not 1–65535 makes the line unreadable.
 */
export const parseSshEndpoint = (line: string | null | undefined): SshEndpoint | undefined => {
  if (typeof line !== 'string') return undefined;
  const tokens = line
    .trim()
    .split(/\s+/)
    .filter((t) => t !== '');
  if (tokens[0] === 'ssh') tokens.shift();
  let destination: { host: string; port?: number } | undefined;
  let optionPort: string | undefined;
  for (let i = 0; i < tokens.length; i += 1) {
    const token = tokens[i] as string;
    if (token.startsWith('-') && token.length > 1) {
      const flag = token[1] as string;
      if (!OPTIONS_WITH_ARGUMENT.has(flag)) continue;
      const value = token.length > 2 ? token.slice(2) : tokens[(i += 1)];
      if (flag === 'p') optionPort = value ?? '';
      if (flag === 'o' && value !== undefined) {
        const option = /^port[=\s]?(.*)$/i.exec(value);
        if (option) optionPort = option[1] === '' ? (tokens[(i += 1)] ?? '') : option[1];
      }
      continue;
    }
    if (destination) continue; // a remote command after the destination
    destination = destinationOf(token);
    if (!destination) return undefined;
  }
  if (!destination || !validHost(destination.host)) return undefined;
  if (optionPort !== undefined) {
    const port = portOf(optionPort);
    return port === undefined ? undefined : { host: destination.host, port };
  }
  return { host: destination.host, port: destination.port ?? DEFAULT_SSH_PORT };
};
