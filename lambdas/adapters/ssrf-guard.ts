/**
 * Connect-time SSRF guard for callback and chat deliveries. The address is judged when the socket
 * is opened, after DNS, so a name that resolved to a public address during validation and to
 * 169.254.169.254 a moment later (DNS rebinding) is still refused. Literal IP hosts skip DNS in
 * Node's net.connect, so the connector judges them itself before connecting.
 */
import { lookup as dnsLookup, type LookupAddress, type LookupOptions } from 'node:dns';
import { isIP } from 'node:net';
import { Agent, buildConnector, type Dispatcher } from 'undici';
import { isRefusedAddress } from '../domain/address-policy';

/** A destination the SSRF policy refuses (private, loopback, link-local... or not http(s)). Never retried. */
export class BlockedDestinationError extends Error {
  public constructor(message: string) {
    super(message);
    this.name = 'BlockedDestinationError';
  }
}

/** The shape of `dns.lookup` with `all: true`, injectable for tests. */
export type Resolver = (
  hostname: string,
  options: LookupOptions & { all: true },
  callback: (error: NodeJS.ErrnoException | null, addresses: LookupAddress[]) => void,
) => void;

type LookupCallback = (error: NodeJS.ErrnoException | null, address: string | LookupAddress[], family?: number) => void;

const defaultResolver: Resolver = (hostname, options, callback) => dnsLookup(hostname, options, callback);

const resolvingLookup = (resolver: Resolver, judge: boolean) =>
  (hostname: string, options: LookupOptions, callback: LookupCallback): void => {
    resolver(hostname, { ...options, all: true }, (error, addresses) => {
      if (error) return callback(error, []);
      const list = addresses ?? [];
      if (list.length === 0) return callback(Object.assign(new Error(`no address for ${hostname}`), { code: 'ENOTFOUND' }), []);
      // Every answer is judged: an attacker controlling DNS can mix a public and a private address.
      if (judge && list.some((a) => isRefusedAddress(a.address))) {
        return callback(new BlockedDestinationError(`destination ${hostname} resolves to a refused address`) as NodeJS.ErrnoException, []);
      }
      if (options.all) return callback(null, list);
      return callback(null, list[0].address, list[0].family);
    });
  };

/** A `lookup` for net.connect that fails with BlockedDestinationError if any resolved address is refused. */
export const guardedLookup = (resolver: Resolver = defaultResolver) => resolvingLookup(resolver, true);

/**
 * An undici dispatcher for outbound deliveries. With `allowPrivate` false it refuses non-http(s)
 * origins and any refused address, literal or resolved, at connect time. With `allowPrivate` true
 * (local runtime, tests) it is a plain Agent. Callers also pass `redirect: 'manual'`: a redirect
 * could point anywhere, so none is followed.
 */
export const guardedDispatcher = (allowPrivate: boolean, options: { lookup?: Resolver } = {}): Dispatcher => {
  if (allowPrivate) {
    // An injected resolver still applies, so tests can map names to a local receiver.
    return options.lookup ? new Agent({ connect: { lookup: resolvingLookup(options.lookup, false) } as buildConnector.BuildOptions }) : new Agent();
  }
  const connector = buildConnector({ lookup: guardedLookup(options.lookup) } as buildConnector.BuildOptions);
  return new Agent({
    connect: (opts, callback) => {
      if (opts.protocol !== 'http:' && opts.protocol !== 'https:') {
        return callback(new BlockedDestinationError(`protocol ${opts.protocol} is not allowed`), null);
      }
      const host = opts.hostname.replace(/^\[|\]$/g, '');
      // Node's net.connect never calls `lookup` for an IP literal, so judge literals here.
      if (isIP(host) !== 0 && isRefusedAddress(host)) {
        return callback(new BlockedDestinationError('destination is a refused address'), null);
      }
      return connector(opts, callback);
    },
  });
};

/** True when `error` or one of its causes is a BlockedDestinationError (fetch wraps it in a TypeError). */
export const isBlockedDestination = (error: unknown): boolean => {
  // Duck-typed: errors may come from another realm (undici internals, test sandboxes).
  for (let e: unknown = error, depth = 0; typeof e === 'object' && e !== null && depth < 5; e = (e as { cause?: unknown }).cause, depth += 1) {
    if ((e as { name?: unknown }).name === 'BlockedDestinationError') return true;
  }
  return false;
};
